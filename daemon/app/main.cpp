#include "core/version.hpp"

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--version") == 0) {
        std::printf("hepd %s (%s)\n", hepd::kVersion, hepd::kGitCommit);
        return 0;
    }
    return 0;
}
