// CompactText: a short text as one shared heap block holding its size and a reference count.
#include "core/compact_text.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <utility>

using hepd::CompactText;

TEST_CASE("a compact text holds its text exactly, clamped to 255 octets", "[core][compact_text]") {
    CHECK(sizeof(CompactText) == 8);
    const CompactText empty;
    CHECK(empty.empty());
    CHECK(empty.view().empty());
    CHECK(empty.heap_bytes() == 0);

    CompactText id = std::string_view("a84b4c76e66710@pc33.atlanta.example.com");
    CHECK(id == std::string_view("a84b4c76e66710@pc33.atlanta.example.com"));
    CHECK(id.size() == 39);
    CHECK(id.heap_bytes() == 39);

    CompactText copy = id;  // shared
    CHECK(copy == id);
    CHECK(copy.shares(id));
    CHECK(copy.view().data() == id.view().data());
    const CompactText equal = id.view();  // the same text, another block
    CHECK(equal == id);
    CHECK_FALSE(equal.shares(id));
    copy = std::string_view("other");  // a new block: the shared one is untouched
    CHECK(copy == std::string_view("other"));
    CHECK(id.size() == 39);
    copy = copy.view().substr(1);  // from a view of itself
    CHECK(copy == std::string_view("ther"));
    copy = std::string_view();
    CHECK(copy.empty());
    CHECK(copy.heap_bytes() == 0);

    const CompactText moved = std::move(id);
    CHECK(moved.size() == 39);
    CHECK(id.empty());  // NOLINT(bugprone-use-after-move): a moved-from text is empty
    {
        const CompactText last = moved;
        CompactText gone = moved;
        gone = std::string_view();
        CHECK(last == moved);
    }
    CHECK(moved == std::string_view("a84b4c76e66710@pc33.atlanta.example.com"));  // the block outlived its sharers

    const std::string long_text(300, 'x');
    const CompactText clamped = std::string_view(long_text);
    CHECK(clamped.size() == CompactText::kMaxSize);
    CHECK(clamped == std::string_view(long_text).substr(0, CompactText::kMaxSize));
}

TEST_CASE("a compact text keeps a tail after its text, outside its view", "[core][compact_text]") {
    const CompactText key = CompactText::with_tail("a84b4c76e66710@pc33.atlanta.example.com", "1928301774");
    CHECK(key.view() == "a84b4c76e66710@pc33.atlanta.example.com");
    CHECK(key.tail() == "1928301774");
    CHECK(key.size() == 39);
    CHECK(key.heap_bytes() == 39);  // what a holder of the text accounts for
    CHECK(key == std::string_view("a84b4c76e66710@pc33.atlanta.example.com"));
    const CompactText plain = key.view();  // equal texts, whatever their tails
    CHECK(plain == key);
    CHECK(plain.tail().empty());
    const CompactText shared = key;
    CHECK(shared.shares(key));
    CHECK(shared.tail() == "1928301774");

    const CompactText only_tail = CompactText::with_tail("", "tag");  // a key with no Call-ID
    CHECK(only_tail.empty());
    CHECK(only_tail.view().empty());
    CHECK(only_tail.tail() == "tag");
    CHECK(CompactText::with_tail("", "").tail().empty());

    const std::string long_text(300, 'x');
    const CompactText clamped = CompactText::with_tail(long_text, long_text);
    CHECK(clamped.size() == CompactText::kMaxSize);
    CHECK(clamped.tail().size() == CompactText::kMaxSize);
}
