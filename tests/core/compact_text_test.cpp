// CompactText: a short text as one heap block with its size beside the pointer.
#include "core/compact_text.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <utility>

using hepd::CompactText;

TEST_CASE("a compact text holds its text exactly, clamped to 255 octets", "[core][compact_text]") {
    CHECK(sizeof(CompactText) == 16);
    const CompactText empty;
    CHECK(empty.empty());
    CHECK(empty.view().empty());
    CHECK(empty.heap_bytes() == 0);

    CompactText id = std::string_view("a84b4c76e66710@pc33.atlanta.example.com");
    CHECK(id == std::string_view("a84b4c76e66710@pc33.atlanta.example.com"));
    CHECK(id.size() == 39);
    CHECK(id.heap_bytes() == 39);

    CompactText copy = id;  // deep
    CHECK(copy == id);
    CHECK(copy.view().data() != id.view().data());
    copy = std::string_view("other");
    CHECK(copy == std::string_view("other"));
    CHECK(id.size() == 39);
    copy = copy.view().substr(1);  // from a view of itself
    CHECK(copy == std::string_view("ther"));
    copy = std::string_view();
    CHECK(copy.empty());
    CHECK(copy.heap_bytes() == 0);

    const CompactText moved = std::move(id);
    CHECK(moved.size() == 39);

    const std::string long_text(300, 'x');
    const CompactText clamped = std::string_view(long_text);
    CHECK(clamped.size() == CompactText::kMaxSize);
    CHECK(clamped == std::string_view(long_text).substr(0, CompactText::kMaxSize));
}
