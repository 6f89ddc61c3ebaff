// Replays a fuzz target's seed and crash corpus as an ordinary test: every file under the given
// directories (recursively) is fed to LLVMFuzzerTestOneInput once. Built when libFuzzer is not.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    std::size_t count = 0;
    for (int i = 1; i < argc; ++i) {
        const fs::path root(argv[i]);
        if (!fs::exists(root)) {
            std::fprintf(stderr, "replay: no corpus at %s\n", argv[i]);
            return 1;
        }
        std::vector<fs::path> files;
        if (fs::is_directory(root)) {
            for (const auto& entry : fs::recursive_directory_iterator(root))
                if (entry.is_regular_file()) files.push_back(entry.path());
        } else {
            files.push_back(root);
        }
        for (const auto& file : files) {
            std::ifstream in(file, std::ios::binary);
            std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            // A copy in an exact-size heap buffer lets AddressSanitizer catch any over-read.
            std::vector<std::uint8_t> exact(bytes.begin(), bytes.end());
            LLVMFuzzerTestOneInput(exact.empty() ? nullptr : exact.data(), exact.size());
            ++count;
        }
    }
    if (count == 0) {
        std::fprintf(stderr, "replay: empty corpus\n");
        return 1;
    }
    std::printf("replayed %zu inputs\n", count);
    return 0;
}
