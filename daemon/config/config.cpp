#include "config/config.hpp"

#include "config/units.hpp"
#include "core/log.hpp"
#include "core/packet_meta.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace hepd::config {

ConfigError::ConfigError(std::string source, int line, int column, std::string key_path, std::string detail)
    : std::runtime_error([&] {
          std::string what = source;
          if (line > 0) what += ":" + std::to_string(line) + ":" + std::to_string(column);
          what += ": ";
          if (!key_path.empty()) what += key_path + ": ";
          return what + detail;
      }()),
      source_(std::move(source)),
      line_(line),
      column_(column),
      key_path_(std::move(key_path)),
      detail_(std::move(detail)) {}

namespace {

constexpr std::string_view kLogLevelNames[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};

}  // namespace

std::string_view to_string(LogLevel level) noexcept {
    const auto i = static_cast<std::size_t>(level);
    return i < std::size(kLogLevelNames) ? kLogLevelNames[i] : "unknown";
}

std::optional<LogLevel> parse_log_level(std::string_view text) noexcept {
    for (std::size_t i = 0; i < std::size(kLogLevelNames); ++i)
        if (kLogLevelNames[i] == text) return static_cast<LogLevel>(i);
    return std::nullopt;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Locations and errors

struct Where {
    int line = 0;  // 1-based; 0 = unknown
    int column = 0;
};

Where where_of(const YAML::Mark& mark) {
    if (mark.is_null() || mark.line < 0) return {};
    return {mark.line + 1, mark.column + 1};
}

Where where_of(const YAML::Node& node) { return where_of(node.Mark()); }

struct Ctx {
    std::string source;
    // Where each key seen in the document was, so checks spanning several keys can point at one.
    std::map<std::string, Where, std::less<>> seen;

    [[noreturn]] void fail(Where where, std::string path, std::string detail) const {
        throw ConfigError(source, where.line, where.column, std::move(path), std::move(detail));
    }
    Where where_of_key(std::string_view path) const {
        const auto it = seen.find(path);
        return it == seen.end() ? Where{} : it->second;
    }
};

// A value of the document and its identity: dotted path ("hep.listen[1]") and location.
struct Item {
    YAML::Node node;
    std::string path;
    Where where;
};

std::string join(std::string_view parent, std::string_view key) {
    if (parent.empty()) return std::string(key);
    std::string out(parent);
    out += '.';
    out += key;
    return out;
}

std::string indexed(std::string_view parent, std::size_t i) {
    return std::string(parent) + "[" + std::to_string(i) + "]";
}

// Quotes text for an error message: escapes what would garble a terminal, keeps it short.
std::string quote(std::string_view text) {
    constexpr std::size_t kMax = 60;
    std::string out = "\"";
    std::size_t i = 0;
    for (; i < text.size() && i < kMax; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
            static constexpr char kHex[] = "0123456789abcdef";
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 0xf];
        } else {
            out += static_cast<char>(c);
        }
    }
    if (i < text.size()) {
        // Do not leave half a UTF-8 sequence before the ellipsis.
        while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xc0) == 0x80) out.pop_back();
        if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xc0) out.pop_back();
        out += "...";
    }
    out += '"';
    return out;
}

bool is_quoted(const YAML::Node& node) { return node.Tag() == "!"; }

std::string describe(const YAML::Node& node) {
    switch (node.Type()) {
    case YAML::NodeType::Null: return "nothing (null)";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return quote(node.Scalar());
    case YAML::NodeType::Undefined: break;
    }
    return "nothing";
}

[[noreturn]] void fail_expected(const Ctx& ctx, const Item& item, std::string_view expected,
                                std::string_view why = {}) {
    std::string detail = "expected " + std::string(expected) + ", got " + describe(item.node);
    if (!why.empty()) detail += " (" + std::string(why) + ")";
    ctx.fail(item.where, item.path, std::move(detail));
}

// Tags that only restate what the value already is are fine; anything else ("!secret x") would
// be silently read as a literal, so it is refused.
void check_tag(const Ctx& ctx, const Item& item) {
    const std::string& tag = item.node.Tag();
    if (tag.empty() || tag == "?" || tag == "!" || tag.rfind("tag:yaml.org,2002:", 0) == 0) return;
    ctx.fail(item.where, item.path, "unsupported YAML tag " + quote(tag));
}

// ---------------------------------------------------------------------------------------------
// Scalars

const std::string& scalar_or_fail(const Ctx& ctx, const Item& item, std::string_view expected) {
    if (!item.node.IsScalar()) fail_expected(ctx, item, expected);
    check_tag(ctx, item);
    return item.node.Scalar();
}

// Numbers and booleans must be plain YAML scalars: a quoted "5" is a string in YAML.
const std::string& plain_scalar_or_fail(const Ctx& ctx, const Item& item, std::string_view expected) {
    const std::string& text = scalar_or_fail(ctx, item, expected);
    if (is_quoted(item.node))
        ctx.fail(item.where, item.path,
                 "expected " + std::string(expected) + ", got the quoted string " + quote(text) +
                     " (numbers and booleans are written without quotes)");
    return text;
}

bool read_bool(const Ctx& ctx, const Item& item) {
    constexpr std::string_view kExpected = "true or false";
    const std::string& text = plain_scalar_or_fail(ctx, item, kExpected);
    if (text == "true" || text == "True" || text == "TRUE") return true;
    if (text == "false" || text == "False" || text == "FALSE") return false;
    fail_expected(ctx, item, kExpected);
}

std::optional<std::uint64_t> parse_uint(std::string_view text) {
    unsigned base = 10;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        base = 16;
        text.remove_prefix(2);
    }
    if (text.empty()) return std::nullopt;
    std::uint64_t value = 0;
    for (char c : text) {
        unsigned digit = 0;
        if (c >= '0' && c <= '9')
            digit = static_cast<unsigned>(c - '0');
        else if (base == 16 && c >= 'a' && c <= 'f')
            digit = static_cast<unsigned>(c - 'a' + 10);
        else if (base == 16 && c >= 'A' && c <= 'F')
            digit = static_cast<unsigned>(c - 'A' + 10);
        else
            return std::nullopt;
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / base) return std::nullopt;
        value = value * base + digit;
    }
    return value;
}

std::uint64_t read_uint(const Ctx& ctx, const Item& item, std::uint64_t min, std::uint64_t max) {
    const std::string expected = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    const std::string& text = plain_scalar_or_fail(ctx, item, expected);
    const auto value = parse_uint(text);
    if (!value || *value < min || *value > max) fail_expected(ctx, item, expected);
    return *value;
}

std::string why(UnitError e) {
    switch (e) {
    case UnitError::empty: return "empty";
    case UnitError::invalid: return "not a whole number followed by a unit";
    case UnitError::missing_unit: return "missing unit";
    case UnitError::unknown_unit: return "unknown unit";
    case UnitError::negative: return "negative";
    case UnitError::overflow: return "too large";
    }
    return std::string(to_string(e));
}

std::uint64_t read_size(const Ctx& ctx, const Item& item, std::uint64_t min, std::uint64_t max) {
    const std::string expected = "a size in [" + format_size(min) + ", " + format_size(max) +
                                 "] (bytes, or a whole number with KiB, MiB or GiB)";
    const std::string& text = scalar_or_fail(ctx, item, expected);
    const auto value = parse_size(text);
    if (!value) fail_expected(ctx, item, expected, why(value.error()));
    if (*value < min || *value > max) fail_expected(ctx, item, expected, "out of range");
    return *value;
}

struct DurationRange {
    Duration min;
    Duration max;
    bool zero_ok = false;  // 0 is allowed (and means "off") even though min > 0
};

Duration read_duration(const Ctx& ctx, const Item& item, DurationRange range) {
    std::string expected = "a duration in [" + format_duration(range.min) + ", " + format_duration(range.max) + "]";
    if (range.zero_ok) expected = "0 or " + expected;
    expected += " (whole numbers with us, ms, s, m or h, e.g. 500ms, 32s, 1h30m)";
    const std::string& text = scalar_or_fail(ctx, item, expected);
    const auto value = parse_duration(text);
    if (!value) fail_expected(ctx, item, expected, why(value.error()));
    const bool in_range = (*value >= range.min && *value <= range.max) || (range.zero_ok && value->count() == 0);
    if (!in_range) fail_expected(ctx, item, expected, "out of range");
    return *value;
}

// Valid UTF-8 without control characters (C0, DEL, C1) or Unicode line/paragraph separators
// and BOMs: such bytes in a key file are accidents, and YAML treats some of them as line breaks.
bool is_clean_text(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f) return false;
            ++i;
            continue;
        }
        std::size_t len = 0;
        std::uint32_t cp = 0;
        if ((c & 0xe0) == 0xc0) {
            len = 2;
            cp = c & 0x1fu;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3;
            cp = c & 0x0fu;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4;
            cp = c & 0x07u;
        } else
            return false;
        if (i + len > text.size()) return false;
        for (std::size_t k = 1; k < len; ++k) {
            const auto cc = static_cast<unsigned char>(text[i + k]);
            if ((cc & 0xc0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3fu);
        }
        const std::uint32_t min_cp = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
        if (cp < min_cp || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 || cp == 0xfeff) return false;
        i += len;
    }
    return true;
}

std::string read_string(const Ctx& ctx, const Item& item, std::size_t min_len, std::size_t max_len) {
    const std::string expected =
        min_len == 0 ? "a string of at most " + std::to_string(max_len) + " bytes"
                     : "a string of " + std::to_string(min_len) + " to " + std::to_string(max_len) + " bytes";
    const std::string& text = scalar_or_fail(ctx, item, expected);
    if (text.size() < min_len || text.size() > max_len) fail_expected(ctx, item, expected);
    if (!is_clean_text(text)) fail_expected(ctx, item, expected, "control characters or invalid UTF-8");
    return text;
}

// Agent and payload type names end up as metric label values and in logs: keep them tame.
bool is_name(std::string_view text) {
    if (text.empty() || text.size() > 64) return false;
    return std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
               c == '.';
    });
}

std::string read_name(const Ctx& ctx, const Item& item) {
    constexpr std::string_view kExpected = "a name of 1 to 64 letters, digits, '_', '-' or '.'";
    const std::string& text = scalar_or_fail(ctx, item, kExpected);
    if (!is_name(text)) fail_expected(ctx, item, kExpected);
    return text;
}

Endpoint read_endpoint(const Ctx& ctx, const Item& item) {
    constexpr std::string_view kExpected = "ADDRESS:PORT with a literal IP address (e.g. 0.0.0.0:9060 or [::]:9060)";
    const std::string& text = scalar_or_fail(ctx, item, kExpected);
    const auto endpoint = parse_endpoint(text);
    if (!endpoint) fail_expected(ctx, item, kExpected);
    return *endpoint;
}

std::string cidr_why(CidrError e) {
    switch (e) {
    case CidrError::empty: return "empty";
    case CidrError::bad_address: return "not a literal IPv4 or IPv6 address";
    case CidrError::bad_prefix: return "the prefix length is not a number";
    case CidrError::prefix_range: return "the prefix length is over 32 (IPv4) or 128 (IPv6)";
    case CidrError::host_bits_set: return "bits set after the prefix";
    }
    return std::string(to_string(e));
}

Cidr read_cidr(const Ctx& ctx, const Item& item) {
    constexpr std::string_view kExpected = "a CIDR such as 10.0.0.0/8 or 2001:db8::/32 (or a single address)";
    const std::string& text = scalar_or_fail(ctx, item, kExpected);
    const auto cidr = Cidr::parse(text);
    if (!cidr) {
        std::string reason = cidr_why(cidr.error());
        if (cidr.error() == CidrError::host_bits_set) {
            // Suggest the network the operator probably meant.
            const auto slash = text.find('/');
            const auto address = IpAddress::parse(std::string_view(text).substr(0, slash));
            const auto prefix = parse_uint(std::string_view(text).substr(slash + 1));
            if (address && prefix) {
                auto bytes = address->bytes();
                for (std::size_t i = 0; i < bytes.size(); ++i) {
                    const std::uint64_t first_bit = i * 8;
                    if (first_bit + 8 <= *prefix) continue;
                    const auto kept = *prefix > first_bit ? static_cast<unsigned>(*prefix - first_bit) : 0u;
                    bytes[i] = static_cast<std::uint8_t>(bytes[i] & ~(0xffu >> kept));
                }
                const IpAddress network = address->is_v4()
                                              ? IpAddress::v4(std::span<const std::uint8_t, 4>(bytes.data(), 4))
                                              : IpAddress::v6(std::span<const std::uint8_t, 16>(bytes));
                reason += "; did you mean " + network.to_string() + "/" + std::to_string(*prefix) + "?";
            }
        }
        fail_expected(ctx, item, kExpected, reason);
    }
    return *cidr;
}

// ---------------------------------------------------------------------------------------------
// Collections

// Calls fn for each element. A null value (every element commented out) is an empty list.
void for_each_element(const Ctx& ctx, const Item& item, std::size_t max_items,
                      const std::function<void(const Item&)>& fn) {
    if (item.node.IsNull()) return;
    if (!item.node.IsSequence()) fail_expected(ctx, item, "a list");
    check_tag(ctx, item);
    if (item.node.size() > max_items)
        ctx.fail(item.where, item.path, "too many entries (at most " + std::to_string(max_items) + ")");
    std::size_t i = 0;
    for (const auto& element : item.node) {
        // An implicit null's mark points at the next token, so it falls back to the list's place.
        Where where = element.IsNull() ? Where{} : where_of(element);
        if (where.line == 0) where = item.where;
        fn(Item{element, indexed(item.path, i), where});  // NOLINT(cppcoreguidelines-slicing): the node is all we need
        ++i;
    }
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = up;
        }
    }
    return row[b.size()];
}

std::string unknown_key_detail(std::string_view key, const std::vector<std::string_view>& known) {
    std::string_view best;
    std::size_t best_distance = 3;  // suggest only near misses
    if (key.size() <= 64) {
        for (const auto k : known) {
            const auto d = edit_distance(key, k);
            if (d < best_distance) {
                best_distance = d;
                best = k;
            }
        }
    }
    if (!best.empty()) return "unknown key (did you mean \"" + std::string(best) + "\"?)";
    std::string list;
    for (const auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    return "unknown key (expected one of: " + list + ")";
}

// Calls fn(key, value) for each entry of a mapping, refusing unknown and repeated keys (YAML
// says keys are unique; yaml-cpp keeps both copies, which would let one silently win). A null
// value (every key commented out) is an empty mapping.
void for_each_entry(Ctx& ctx, const Item& item, const std::vector<std::string_view>& known,
                    const std::function<void(std::string_view, const Item&)>& fn) {
    if (item.node.IsNull()) return;
    if (!item.node.IsMap()) fail_expected(ctx, item, "a mapping of keys");
    check_tag(ctx, item);
    std::map<std::string, Where, std::less<>> first_seen;
    for (const auto& entry : item.node) {
        // Copies: yaml-cpp's iterator hands out a temporary pair of (cheap, shared) handles.
        const YAML::Node key_node = entry.first;
        const YAML::Node value = entry.second;
        Where key_where = where_of(key_node);
        if (key_where.line == 0) key_where = item.where;
        if (!key_node.IsScalar()) ctx.fail(key_where, item.path, "keys must be plain names, got " + describe(key_node));
        const std::string& key = key_node.Scalar();
        const std::string path = join(item.path, key);
        if (std::find(known.begin(), known.end(), key) == known.end())
            ctx.fail(key_where, path, unknown_key_detail(key, known));
        if (const auto dup = first_seen.find(key); dup != first_seen.end())
            ctx.fail(key_where, path, "duplicate key (first at line " + std::to_string(dup->second.line) + ")");
        first_seen.emplace(key, key_where);
        Where value_where = value.IsNull() ? key_where : where_of(value);
        if (value_where.line == 0) value_where = key_where;
        ctx.seen[path] = value_where;
        fn(key, Item{value, path, value_where});
    }
}

// ---------------------------------------------------------------------------------------------
// The schema: one table drives parsing, overrides, printing and the key list.

enum class OverrideKind : std::uint8_t { scalar, list, file_only };

struct Field {
    std::string_view key;
    std::vector<Field> children;  // non-empty: a section
    std::function<void(Config&, Ctx&, const Item&)> parse;
    std::function<void(const Config&, YAML::Emitter&)> emit;
    OverrideKind override_kind = OverrideKind::scalar;
};

Field section(std::string_view key, std::vector<Field> children) {
    Field f;
    f.key = key;
    f.children = std::move(children);
    return f;
}

template <class Get>
using FieldType = std::remove_reference_t<decltype(std::declval<Get>()(std::declval<Config&>()))>;

template <class Get>
Field bool_field(std::string_view key, Get get) {
    return Field{key,
                 {},
                 [get](Config& c, Ctx& ctx, const Item& item) { get(c) = read_bool(ctx, item); },
                 [get](const Config& c, YAML::Emitter& out) { out << (get(c) ? "true" : "false"); }};
}

template <class Get>
Field uint_field(std::string_view key, Get get, std::uint64_t min, std::uint64_t max) {
    using T = FieldType<Get>;
    static_assert(std::is_unsigned_v<T>);
    max = std::min<std::uint64_t>(max, std::numeric_limits<T>::max());
    return Field{key,
                 {},
                 [get, min, max](Config& c, Ctx& ctx, const Item& item) {
                     get(c) = static_cast<T>(read_uint(ctx, item, min, max));
                 },
                 [get](const Config& c, YAML::Emitter& out) { out << std::to_string(get(c)); }};
}

template <class Get>
Field size_field(std::string_view key, Get get, std::uint64_t min, std::uint64_t max) {
    using T = FieldType<Get>;
    max = std::min<std::uint64_t>(max, std::numeric_limits<T>::max());
    return Field{key,
                 {},
                 [get, min, max](Config& c, Ctx& ctx, const Item& item) {
                     get(c) = static_cast<T>(read_size(ctx, item, min, max));
                 },
                 [get](const Config& c, YAML::Emitter& out) { out << format_size(get(c)); }};
}

template <class Get>
Field duration_field(std::string_view key, Get get, DurationRange range) {
    return Field{key,
                 {},
                 [get, range](Config& c, Ctx& ctx, const Item& item) { get(c) = read_duration(ctx, item, range); },
                 [get](const Config& c, YAML::Emitter& out) { out << format_duration(get(c)); }};
}

template <class Get>
Field string_field(std::string_view key, Get get, std::size_t min_len, std::size_t max_len,
                   const std::function<void(const Ctx&, const Item&, const std::string&)>& check = {}) {
    return Field{key,
                 {},
                 [get, min_len, max_len, check](Config& c, Ctx& ctx, const Item& item) {
                     std::string value = read_string(ctx, item, min_len, max_len);
                     if (check) check(ctx, item, value);
                     get(c) = std::move(value);
                 },
                 [get](const Config& c, YAML::Emitter& out) { out << YAML::DoubleQuoted << get(c); }};
}

template <class Get>
Field endpoint_field(std::string_view key, Get get) {
    return Field{key,
                 {},
                 [get](Config& c, Ctx& ctx, const Item& item) { get(c) = read_endpoint(ctx, item); },
                 [get](const Config& c, YAML::Emitter& out) { out << YAML::DoubleQuoted << get(c).to_string(); }};
}

// A list of scalars; duplicates are refused (they are always a mistake: a double bind, a port
// listed twice).
template <class Get, class Read, class Print>
Field scalar_list_field(std::string_view key, Get get, std::size_t max_items, Read read, Print print) {
    Field f{key,
            {},
            [get, max_items, read](Config& c, Ctx& ctx, const Item& item) {
                FieldType<Get> values;
                std::vector<Where> wheres;
                for_each_element(ctx, item, max_items, [&](const Item& element) {
                    auto value = read(ctx, element);
                    const auto dup = std::find(values.begin(), values.end(), value);
                    if (dup != values.end()) {
                        const auto first = wheres[static_cast<std::size_t>(dup - values.begin())];
                        std::string detail = "duplicate entry";
                        if (first.line > 0) detail += " (first at line " + std::to_string(first.line) + ")";
                        ctx.fail(element.where, element.path, detail);
                    }
                    values.push_back(std::move(value));
                    wheres.push_back(element.where);
                });
                get(c) = std::move(values);
            },
            [get, print](const Config& c, YAML::Emitter& out) {
                out << YAML::Flow << YAML::BeginSeq;
                for (const auto& v : get(c)) print(out, v);
                out << YAML::EndSeq;
            },
            OverrideKind::list};
    return f;
}

template <class Get>
Field endpoint_list_field(std::string_view key, Get get) {
    return scalar_list_field(key, get, 64, read_endpoint,
                             [](YAML::Emitter& out, const Endpoint& e) { out << YAML::DoubleQuoted << e.to_string(); });
}

template <class Get>
Field cidr_list_field(std::string_view key, Get get) {
    return scalar_list_field(key, get, 4096, read_cidr, [](YAML::Emitter& out, const Cidr& cidr) {
        out << YAML::DoubleQuoted << cidr.to_string();
    });
}

template <class Get>
Field port_list_field(std::string_view key, Get get) {
    return scalar_list_field(
        key, get, 64,
        [](const Ctx& ctx, const Item& item) { return static_cast<std::uint16_t>(read_uint(ctx, item, 1, 65535)); },
        [](YAML::Emitter& out, std::uint16_t port) { out << std::to_string(port); });
}

Field log_level_field() {
    return Field{"log_level",
                 {},
                 [](Config& c, Ctx& ctx, const Item& item) {
                     constexpr std::string_view kExpected = "one of trace, debug, info, warn, error, critical, off";
                     const auto level = parse_log_level(scalar_or_fail(ctx, item, kExpected));
                     if (!level) fail_expected(ctx, item, kExpected);
                     c.log_level = *level;
                 },
                 [](const Config& c, YAML::Emitter& out) { out << std::string(to_string(c.log_level)); }};
}

// Required keys of a list entry: reports the first one missing at the entry's location.
void require_keys(const Ctx& ctx, const Item& entry, const std::set<std::string_view>& present,
                  std::initializer_list<std::string_view> required) {
    for (const auto key : required)
        if (!present.contains(key)) ctx.fail(entry.where, entry.path, "missing required key " + std::string(key));
}

std::string first_at(Where where) {
    return where.line > 0 ? " (first at line " + std::to_string(where.line) + ")" : std::string();
}

Field payload_types_field() {
    Field f;
    f.key = "payload_types";
    f.override_kind = OverrideKind::file_only;
    f.parse = [](Config& c, Ctx& ctx, const Item& item) {
        std::vector<PayloadTypeConfig> types;
        std::map<std::uint8_t, Where> codes;
        for_each_element(ctx, item, 256, [&](const Item& entry) {
            PayloadTypeConfig type;
            std::set<std::string_view> present;
            Where code_where = entry.where;
            for_each_entry(ctx, entry, {"code", "name", "class"}, [&](std::string_view key, const Item& value) {
                present.insert(key);
                if (key == "code") {
                    type.code = static_cast<std::uint8_t>(read_uint(ctx, value, 0, 255));
                    code_where = value.where;
                } else if (key == "name") {
                    type.name = read_name(ctx, value);
                } else {
                    constexpr std::string_view kExpected = "one of sip, rtp, rtcp, rtcp_json, qos, log, other";
                    const auto cls = parse_payload_class(scalar_or_fail(ctx, value, kExpected));
                    if (!cls) fail_expected(ctx, value, kExpected);
                    type.payload_class = *cls;
                }
            });
            require_keys(ctx, entry, present, {"code", "name", "class"});
            if (const auto dup = codes.find(type.code); dup != codes.end())
                ctx.fail(code_where, entry.path + ".code",
                         "payload type " + std::to_string(type.code) + " is listed twice" + first_at(dup->second));
            codes.emplace(type.code, code_where);
            types.push_back(std::move(type));
        });
        c.hep.payload_types = std::move(types);
    };
    f.emit = [](const Config& c, YAML::Emitter& out) {
        if (c.hep.payload_types.empty()) {
            out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
            return;
        }
        out << YAML::BeginSeq;
        for (const auto& t : c.hep.payload_types) {
            out << YAML::BeginMap;
            out << YAML::Key << "code" << YAML::Value << std::to_string(t.code);
            out << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << t.name;
            out << YAML::Key << "class" << YAML::Value << std::string(to_string(t.payload_class));
            out << YAML::EndMap;
        }
        out << YAML::EndSeq;
    };
    return f;
}

Field agents_field() {
    Field f;
    f.key = "agents";
    f.override_kind = OverrideKind::file_only;
    f.parse = [](Config& c, Ctx& ctx, const Item& item) {
        std::vector<AgentConfig> agents;
        std::map<std::string, Where, std::less<>> names;
        std::map<std::uint32_t, Where> capture_ids;
        std::map<Cidr, Where> cidrs;
        std::map<std::string, Where, std::less<>> node_names;
        // Agent numbers index the per-agent counters, 0 being "other": the daemon has room for
        // kMaxAgents - 1 names and would ignore the rest, which check-config would not show.
        if (item.node.IsSequence() && item.node.size() > kMaxAgents - 1)
            ctx.fail(item.where, item.path,
                     "at most " + std::to_string(kMaxAgents - 1) + " agents can be named, got " +
                         std::to_string(item.node.size()) + " (traffic from unnamed agents is counted as \"other\")");
        for_each_element(ctx, item, kMaxAgents - 1, [&](const Item& entry) {
            AgentConfig agent;
            std::set<std::string_view> present;
            std::string_view selector_key;
            Where name_where = entry.where;
            Where selector_where = entry.where;
            for_each_entry(
                ctx, entry, {"name", "capture_id", "cidr", "node_name"}, [&](std::string_view key, const Item& value) {
                    present.insert(key);
                    if (key == "name") {
                        agent.name = read_name(ctx, value);
                        if (agent.name == "other")
                            ctx.fail(value.where, value.path, "\"other\" is reserved for traffic from unnamed agents");
                        name_where = value.where;
                        return;
                    }
                    if (!selector_key.empty())
                        ctx.fail(value.where, value.path,
                                 "an agent is matched by exactly one of capture_id, cidr, node_name; "
                                 "this one already has " +
                                     std::string(selector_key));
                    selector_key = key;
                    selector_where = value.where;
                    if (key == "capture_id") {
                        agent.selector = AgentConfig::Selector::capture_id;
                        agent.capture_id = static_cast<std::uint32_t>(read_uint(ctx, value, 0, 0xffffffffu));
                    } else if (key == "cidr") {
                        agent.selector = AgentConfig::Selector::cidr;
                        agent.cidr = read_cidr(ctx, value);
                    } else {
                        agent.selector = AgentConfig::Selector::node_name;
                        agent.node_name = read_string(ctx, value, 1, 256);
                    }
                });
            require_keys(ctx, entry, present, {"name"});
            if (selector_key.empty()) ctx.fail(entry.where, entry.path, "needs one of capture_id, cidr, node_name");
            if (const auto dup = names.find(agent.name); dup != names.end())
                ctx.fail(name_where, entry.path + ".name",
                         "duplicate agent name " + quote(agent.name) + first_at(dup->second));
            names.emplace(agent.name, name_where);
            const std::string selector_path = entry.path + "." + std::string(selector_key);
            const auto claim = [&](auto& seen, const auto& value, const std::string& text) {
                if (const auto dup = seen.find(value); dup != seen.end())
                    ctx.fail(selector_where, selector_path,
                             std::string(selector_key) + " " + text + " already names another agent" +
                                 first_at(dup->second));
                seen.emplace(value, selector_where);
            };
            switch (agent.selector) {
            case AgentConfig::Selector::capture_id:
                claim(capture_ids, agent.capture_id, std::to_string(agent.capture_id));
                break;
            case AgentConfig::Selector::cidr: claim(cidrs, agent.cidr, agent.cidr.to_string()); break;
            case AgentConfig::Selector::node_name: claim(node_names, agent.node_name, quote(agent.node_name)); break;
            }
            agents.push_back(std::move(agent));
        });
        c.agents = std::move(agents);
    };
    f.emit = [](const Config& c, YAML::Emitter& out) {
        if (c.agents.empty()) {
            out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
            return;
        }
        out << YAML::BeginSeq;
        for (const auto& a : c.agents) {
            out << YAML::BeginMap;
            out << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << a.name;
            switch (a.selector) {
            case AgentConfig::Selector::capture_id:
                out << YAML::Key << "capture_id" << YAML::Value << std::to_string(a.capture_id);
                break;
            case AgentConfig::Selector::cidr:
                out << YAML::Key << "cidr" << YAML::Value << YAML::DoubleQuoted << a.cidr.to_string();
                break;
            case AgentConfig::Selector::node_name:
                out << YAML::Key << "node_name" << YAML::Value << YAML::DoubleQuoted << a.node_name;
                break;
            }
            out << YAML::EndMap;
        }
        out << YAML::EndSeq;
    };
    return f;
}

// ---------------------------------------------------------------------------------------------
// relay: downstream HEP collectors

constexpr std::size_t kMaxRelayDestinations = 16;

// "host:port" with a DNS name or IPv4 literal, or "[v6]:port". Host names are checked for the
// characters DNS allows, so that a typo fails here and not at the first connection attempt.
std::optional<std::pair<std::string, std::uint16_t>> parse_host_port(std::string_view text) {
    std::string_view host;
    std::string_view port;
    if (text.starts_with('[')) {
        const auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') return std::nullopt;
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
        const auto ip = IpAddress::parse(host);
        if (!ip || !ip->is_v6()) return std::nullopt;
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string_view::npos) return std::nullopt;
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.empty() || host.size() > 253 || host.find(':') != std::string_view::npos) return std::nullopt;
        const bool dns_chars = std::all_of(host.begin(), host.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
                   c == '_';
        });
        if (!dns_chars || host.front() == '.' || host.front() == '-') return std::nullopt;
    }
    const auto number = parse_uint(port);
    if (!number || *number == 0 || *number > 65535) return std::nullopt;
    return std::pair{std::string(host), static_cast<std::uint16_t>(*number)};
}

Field relay_field() {
    Field f;
    f.key = "relay";
    f.override_kind = OverrideKind::file_only;
    f.parse = [](Config& c, Ctx& ctx, const Item& item) {
        constexpr std::uint64_t kMinQueue = 128u
                                            << 10;  // ~two of the largest HEP messages (relay::Relay::kMinQueueBytes)
        constexpr std::uint64_t kMaxQueue = 1u << 30;
        std::vector<RelayDestinationConfig> destinations;
        std::map<std::string, Where, std::less<>> names;
        std::map<std::string, Where, std::less<>> targets;
        for_each_element(ctx, item, kMaxRelayDestinations, [&](const Item& entry) {
            RelayDestinationConfig d;
            std::set<std::string_view> present;
            Where name_where = entry.where;
            Where address_where = entry.where;
            std::string address;
            for_each_entry(ctx, entry, {"name", "address", "transport", "queue_bytes"},
                           [&](std::string_view key, const Item& value) {
                               present.insert(key);
                               if (key == "name") {
                                   d.name = read_name(ctx, value);
                                   name_where = value.where;
                               } else if (key == "address") {
                                   constexpr std::string_view kExpected =
                                       "HOST:PORT with a DNS name or IPv4 address, or [IPV6]:PORT "
                                       "(e.g. homer.example.net:9060, 10.0.0.5:9060, [2001:db8::5]:9060)";
                                   address = scalar_or_fail(ctx, value, kExpected);
                                   const auto parsed = parse_host_port(address);
                                   if (!parsed) fail_expected(ctx, value, kExpected);
                                   d.host = parsed->first;
                                   d.port = parsed->second;
                                   address_where = value.where;
                               } else if (key == "transport") {
                                   constexpr std::string_view kExpected = "udp or tcp";
                                   const std::string& text = scalar_or_fail(ctx, value, kExpected);
                                   if (text == "udp") {
                                       d.transport = RelayDestinationConfig::Transport::udp;
                                   } else if (text == "tcp") {
                                       d.transport = RelayDestinationConfig::Transport::tcp;
                                   } else {
                                       fail_expected(ctx, value, kExpected);
                                   }
                               } else {
                                   d.queue_bytes = read_size(ctx, value, kMinQueue, kMaxQueue);
                               }
                           });
            require_keys(ctx, entry, present, {"address"});
            // Metric labels carry no addresses: a DNS name may stand for the destination, an IP
            // address may not.
            if (d.name.empty()) {
                if (IpAddress::parse(d.host) || !is_name(d.host))
                    ctx.fail(entry.where, entry.path,
                             "needs a name (the `destination` label of the relay metrics, e.g. name: homer): "
                             "only a DNS name of up to 64 characters stands for itself");
                d.name = d.host;
                name_where = address_where;
            }
            if (const auto dup = names.find(d.name); dup != names.end())
                ctx.fail(name_where, entry.path + ".name",
                         "duplicate relay destination name " + quote(d.name) + first_at(dup->second) +
                             "; give each destination its own name");
            names.emplace(d.name, name_where);
            const std::string target = std::string(to_string(d.transport)) + "://" + relay_address(d);
            if (const auto dup = targets.find(target); dup != targets.end())
                ctx.fail(
                    address_where, entry.path + ".address",
                    target + " is listed twice" + first_at(dup->second) + "; it would receive every message twice");
            targets.emplace(target, address_where);
            destinations.push_back(std::move(d));
        });
        c.relay = std::move(destinations);
    };
    f.emit = [](const Config& c, YAML::Emitter& out) {
        if (c.relay.empty()) {
            out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
            return;
        }
        out << YAML::BeginSeq;
        for (const auto& d : c.relay) {
            out << YAML::BeginMap;
            out << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << d.name;
            out << YAML::Key << "address" << YAML::Value << YAML::DoubleQuoted << relay_address(d);
            out << YAML::Key << "transport" << YAML::Value << std::string(to_string(d.transport));
            out << YAML::Key << "queue_bytes" << YAML::Value << format_size(d.queue_bytes);
            out << YAML::EndMap;
        }
        out << YAML::EndSeq;
    };
    return f;
}

// peers: names and networks are checked here; that the agents exist, in validate().
Field peers_field() {
    Field f;
    f.key = "peers";
    f.override_kind = OverrideKind::file_only;
    f.parse = [](Config& c, Ctx& ctx, const Item& item) {
        std::vector<PeerConfig> peers;
        std::map<std::string, Where, std::less<>> names;
        std::map<Cidr, std::pair<std::string, Where>> cidrs;
        std::map<std::string, std::pair<std::string, Where>, std::less<>> agents;
        for_each_element(ctx, item, kMaxPeers, [&](const Item& entry) {
            PeerConfig peer;
            std::set<std::string_view> present;
            Where name_where = entry.where;
            std::vector<std::pair<Cidr, Where>> entry_cidrs;
            std::vector<std::pair<std::string, Where>> entry_agents;
            for_each_entry(ctx, entry, {"name", "cidr", "agents"}, [&](std::string_view key, const Item& value) {
                present.insert(key);
                if (key == "name") {
                    peer.name = read_name(ctx, value);
                    if (peer.name == "other")
                        ctx.fail(value.where, value.path, "\"other\" is reserved for far ends in no group");
                    name_where = value.where;
                } else if (key == "cidr") {
                    // One network, or a list of them.
                    if (value.node.IsScalar()) {
                        entry_cidrs.emplace_back(read_cidr(ctx, value), value.where);
                    } else {
                        for_each_element(ctx, value, 4096, [&](const Item& element) {
                            entry_cidrs.emplace_back(read_cidr(ctx, element), element.where);
                        });
                    }
                } else {
                    for_each_element(ctx, value, kMaxAgents, [&](const Item& element) {
                        entry_agents.emplace_back(read_name(ctx, element), element.where);
                    });
                }
            });
            require_keys(ctx, entry, present, {"name"});
            if (entry_cidrs.empty() && entry_agents.empty())
                ctx.fail(entry.where, entry.path, "needs at least one network (cidr) or capture agent (agents)");
            if (const auto dup = names.find(peer.name); dup != names.end())
                ctx.fail(name_where, entry.path + ".name",
                         "duplicate peer name " + quote(peer.name) + first_at(dup->second));
            names.emplace(peer.name, name_where);
            for (const auto& [cidr, where] : entry_cidrs) {
                if (const auto dup = cidrs.find(cidr); dup != cidrs.end())
                    ctx.fail(where, entry.path + ".cidr",
                             "cidr " + cidr.to_string() + " is already in peer " + quote(dup->second.first) +
                                 first_at(dup->second.second));
                cidrs.emplace(cidr, std::make_pair(peer.name, where));
                peer.cidrs.push_back(cidr);
            }
            for (auto& [agent, where] : entry_agents) {
                if (const auto dup = agents.find(agent); dup != agents.end())
                    ctx.fail(where, entry.path + ".agents",
                             "agent " + quote(agent) + " is already in peer " + quote(dup->second.first) +
                                 first_at(dup->second.second));
                agents.emplace(agent, std::make_pair(peer.name, where));
                peer.agents.push_back(std::move(agent));
            }
            peers.push_back(std::move(peer));
        });
        c.peers = std::move(peers);
    };
    f.emit = [](const Config& c, YAML::Emitter& out) {
        if (c.peers.empty()) {
            out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
            return;
        }
        out << YAML::BeginSeq;
        for (const auto& p : c.peers) {
            out << YAML::BeginMap;
            out << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << p.name;
            if (!p.cidrs.empty()) {
                out << YAML::Key << "cidr" << YAML::Value << YAML::Flow << YAML::BeginSeq;
                for (const auto& cidr : p.cidrs) out << YAML::DoubleQuoted << cidr.to_string();
                out << YAML::EndSeq;
            }
            if (!p.agents.empty()) {
                out << YAML::Key << "agents" << YAML::Value << YAML::Flow << YAML::BeginSeq;
                for (const auto& a : p.agents) out << YAML::DoubleQuoted << a;
                out << YAML::EndSeq;
            }
            out << YAML::EndMap;
        }
        out << YAML::EndSeq;
    };
    return f;
}

void check_metrics_path(const Ctx& ctx, const Item& item, const std::string& path) {
    const bool ok = !path.empty() && path.front() == '/' && std::none_of(path.begin(), path.end(), [](char c) {
        return c == ' ' || c == '?' || c == '#' || static_cast<unsigned char>(c) >= 0x80;
    });
    if (!ok) fail_expected(ctx, item, "an URL path starting with '/' (no spaces, '?' or '#')");
}

// `member` is a member path, not an expression: it cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define HEPD_CONFIG_AT(member) \
    [](auto& c) -> auto& { return c.member; }
// NOLINTEND(bugprone-macro-parentheses)

const std::vector<Field>& schema() {
    using std::chrono::hours;
    using std::chrono::milliseconds;
    using std::chrono::seconds;
    constexpr std::uint64_t kKiB = 1024;
    constexpr std::uint64_t kMiB = 1024 * kKiB;
    constexpr std::uint64_t kGiB = 1024 * kMiB;
    constexpr std::uint64_t kMaxRate = 1'000'000'000;
    // A table holds at most 2^24 - 1 entries (LruTable's 4-byte index slots); the media binding
    // table holds max_streams + max_pending_media.
    constexpr std::uint64_t kMaxEntries = 8'000'000;
    static const std::vector<Field> fields{
        log_level_field(),
        section(
            "hep",
            {
                endpoint_list_field("listen", HEPD_CONFIG_AT(hep.listen)),
                section("udp",
                        {
                            bool_field("enabled", HEPD_CONFIG_AT(hep.udp.enabled)),
                            uint_field("receive_threads", HEPD_CONFIG_AT(hep.udp.receive_threads), 1, 256),
                            size_field("receive_buffer_bytes", HEPD_CONFIG_AT(hep.udp.receive_buffer_bytes), 0, kGiB),
                            uint_field("batch_size", HEPD_CONFIG_AT(hep.udp.batch_size), 1, 1024),
                        }),
                section("tcp",
                        {
                            bool_field("enabled", HEPD_CONFIG_AT(hep.tcp.enabled)),
                            uint_field("max_connections", HEPD_CONFIG_AT(hep.tcp.max_connections), 1, 1'000'000),
                            duration_field("idle_timeout", HEPD_CONFIG_AT(hep.tcp.idle_timeout),
                                           {seconds(1), hours(24), true}),
                            size_field("max_frame_bytes", HEPD_CONFIG_AT(hep.tcp.max_frame_bytes), 6, 65535),
                        }),
                section("rate_limit",
                        {
                            uint_field("rate", HEPD_CONFIG_AT(hep.rate_limit.rate), 0, kMaxRate),
                            uint_field("burst", HEPD_CONFIG_AT(hep.rate_limit.burst), 0, kMaxRate),
                            uint_field("per_agent_rate", HEPD_CONFIG_AT(hep.rate_limit.per_agent_rate), 0, kMaxRate),
                            uint_field("per_agent_burst", HEPD_CONFIG_AT(hep.rate_limit.per_agent_burst), 0, kMaxRate),
                        }),
                string_field("auth_key", HEPD_CONFIG_AT(hep.auth_key), 0, 1024),
                cidr_list_field("allow", HEPD_CONFIG_AT(hep.allow)),
                size_field("max_decompressed_bytes", HEPD_CONFIG_AT(hep.max_decompressed_bytes), kKiB, 64 * kMiB),
                duration_field("clock_offset_limit", HEPD_CONFIG_AT(hep.clock_offset_limit),
                               {milliseconds(100), hours(24)}),
                payload_types_field(),
            }),
        agents_field(),
        peers_field(),
        section("metrics",
                {
                    endpoint_field("listen", HEPD_CONFIG_AT(metrics.listen)),
                    string_field("path", HEPD_CONFIG_AT(metrics.path), 1, 256, check_metrics_path),
                }),
        section("state",
                {
                    string_field("dir", HEPD_CONFIG_AT(state.dir), 1, 4096),
                    duration_field("snapshot_interval", HEPD_CONFIG_AT(state.snapshot_interval),
                                   {seconds(1), hours(24), true}),
                    bool_field("snapshot_on_shutdown", HEPD_CONFIG_AT(state.snapshot_on_shutdown)),
                }),
        section("shards",
                {
                    uint_field("count", HEPD_CONFIG_AT(shards.count), 0, 1024),
                    uint_field("queue_batches", HEPD_CONFIG_AT(shards.queue_batches), 1, 1u << 20),
                    uint_field("batch_size", HEPD_CONFIG_AT(shards.batch_size), 1, 65536),
                    duration_field("max_batch_age", HEPD_CONFIG_AT(shards.max_batch_age),
                                   {milliseconds(1), seconds(1), true}),
                }),
        section("tables",
                {
                    uint_field("max_dialogs", HEPD_CONFIG_AT(tables.max_dialogs), 1, kMaxEntries),
                    uint_field("max_streams", HEPD_CONFIG_AT(tables.max_streams), 1, kMaxEntries),
                    uint_field("max_pending_media", HEPD_CONFIG_AT(tables.max_pending_media), 1, kMaxEntries),
                    uint_field("max_transactions", HEPD_CONFIG_AT(tables.max_transactions), 1, kMaxEntries),
                }),
        section(
            "timers",
            {
                duration_field("invite_timeout", HEPD_CONFIG_AT(timers.invite_timeout), {milliseconds(1), hours(24)}),
                // Up to 120 h: with the longest linger (24 h) a dialog's deadline stays within the 152 h its
                // times can span (sip::DialogTimes).
                duration_field("max_call_duration", HEPD_CONFIG_AT(timers.max_call_duration), {seconds(1), hours(120)}),
                duration_field("stream_idle_timeout", HEPD_CONFIG_AT(timers.stream_idle_timeout),
                               {milliseconds(1), hours(24)}),
                duration_field("dialog_linger", HEPD_CONFIG_AT(timers.dialog_linger), {Duration(0), hours(24)}),
                duration_field("transaction_timeout", HEPD_CONFIG_AT(timers.transaction_timeout),
                               {milliseconds(1), hours(24)}),
            }),
        section("pcap",
                {
                    port_list_field("hep_ports", HEPD_CONFIG_AT(pcap.hep_ports)),
                    port_list_field("sip_ports", HEPD_CONFIG_AT(pcap.sip_ports)),
                    uint_field("max_tcp_streams", HEPD_CONFIG_AT(pcap.max_tcp_streams), 1, 10'000'000),
                }),
        relay_field(),
        section(
            "records",
            {
                bool_field("enabled", HEPD_CONFIG_AT(records.enabled)),
                string_field("path", HEPD_CONFIG_AT(records.path), 1, 4096),
                size_field("max_file_bytes", HEPD_CONFIG_AT(records.max_file_bytes), 4 * kKiB, 1024 * kGiB),
                duration_field("max_file_age", HEPD_CONFIG_AT(records.max_file_age), {seconds(1), hours(168), true}),
                uint_field("keep_files", HEPD_CONFIG_AT(records.keep_files), 0, 100'000),
                duration_field("flush_interval", HEPD_CONFIG_AT(records.flush_interval),
                               {milliseconds(1), seconds(60), true}),
                duration_field("hold", HEPD_CONFIG_AT(records.hold), {Duration(0), hours(1)}),
                uint_field("queue_size", HEPD_CONFIG_AT(records.queue_size), 16, 1u << 24),
                uint_field("max_waiting_media", HEPD_CONFIG_AT(records.max_waiting_media), 1, kMaxEntries),
            }),
        // Below T1 (500ms) with room to spare: a window as long as T1 would swallow genuine
        // retransmissions.
        section(
            "duplicates",
            {
                duration_field("window", HEPD_CONFIG_AT(duplicates.window), {milliseconds(1), milliseconds(250), true}),
                uint_field("capacity", HEPD_CONFIG_AT(duplicates.capacity), 4, 1u << 24),
                bool_field("same_source", HEPD_CONFIG_AT(duplicates.same_source)),
            }),
    };
    return fields;
}

#undef HEPD_CONFIG_AT

std::vector<std::string_view> keys_of(const std::vector<Field>& fields) {
    std::vector<std::string_view> keys;
    keys.reserve(fields.size());
    for (const auto& f : fields) keys.push_back(f.key);
    return keys;
}

void parse_section(const std::vector<Field>& fields, Config& config, Ctx& ctx, const Item& item) {
    for_each_entry(ctx, item, keys_of(fields), [&](std::string_view key, const Item& value) {
        const auto field = std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.key == key; });
        if (!field->children.empty())
            parse_section(field->children, config, ctx, value);
        else
            field->parse(config, ctx, value);
    });
}

void emit_section(const std::vector<Field>& fields, const Config& config, YAML::Emitter& out) {
    out << YAML::BeginMap;
    for (const auto& f : fields) {
        out << YAML::Key << std::string(f.key) << YAML::Value;
        if (!f.children.empty())
            emit_section(f.children, config, out);
        else
            f.emit(config, out);
    }
    out << YAML::EndMap;
}

void collect_paths(const std::vector<Field>& fields, const std::string& prefix, std::vector<std::string>& out) {
    for (const auto& f : fields) {
        const std::string path = join(prefix, f.key);
        if (f.children.empty())
            out.push_back(path);
        else
            collect_paths(f.children, path, out);
    }
}

bool is_unspecified(const IpAddress& a) {
    const auto& b = a.bytes();
    return !a.empty() && std::all_of(b.begin(), b.end(), [](std::uint8_t x) { return x == 0; });
}

// Two TCP listeners that the kernel would refuse to bind together.
bool binds_clash(const Endpoint& a, const Endpoint& b) {
    if (a.port == 0 || a.port != b.port || a.address.family() != b.address.family()) return false;
    return a.address == b.address || is_unspecified(a.address) || is_unspecified(b.address);
}

// Checks that span several keys, or depend on the build; run after every load and every override.
void validate(const Config& c, const Ctx& ctx, const Capabilities& caps) {
    if (c.hep.listen.empty() && (c.hep.udp.enabled || c.hep.tcp.enabled)) {
        Where where = ctx.where_of_key("hep.listen");
        ctx.fail(where, "hep.listen",
                 "must list at least one ADDRESS:PORT while hep.udp or hep.tcp is enabled "
                 "(set hep.udp.enabled and hep.tcp.enabled to false to receive no HEP)");
    }
    // Each entry is bound for UDP and TCP: a wildcard and another address of its family on the
    // same port cannot both be (EADDRINUSE at start). 0.0.0.0 and [::] can: IPv6 sockets are v6-only.
    if (c.hep.udp.enabled || c.hep.tcp.enabled) {
        for (std::size_t j = 1; j < c.hep.listen.size(); ++j) {
            for (std::size_t i = 0; i < j; ++i) {
                const Endpoint& a = c.hep.listen[i];
                const Endpoint& b = c.hep.listen[j];
                if (!binds_clash(a, b)) continue;
                const Endpoint& wildcard = is_unspecified(a.address) ? a : b;
                ctx.fail(ctx.where_of_key("hep.listen"), indexed("hep.listen", j),
                         b.to_string() + " overlaps " + a.to_string() + " (hep.listen[" + std::to_string(i) +
                             "]): " + wildcard.to_string() + " already takes port " + std::to_string(a.port) +
                             " on every " + (a.address.is_v4() ? "IPv4" : "IPv6") +
                             " address, so the second could not be bound; list one of them");
            }
        }
    }
    // The same words as the exporter's refusal at start, which this check forestalls.
    if (c.metrics.listen.address.is_v6() && !caps.metrics_ipv6)
        ctx.fail(ctx.where_of_key("metrics.listen"), "metrics.listen",
                 "cannot serve metrics on " + c.metrics.listen.to_string() +
                     ": the civetweb library in use was built without IPv6 support; listen on an IPv4 address "
                     "instead (0.0.0.0:" +
                     std::to_string(c.metrics.listen.port) + " for all)");
    if (c.hep.tcp.enabled) {
        for (const auto& e : c.hep.listen) {
            if (binds_clash(e, c.metrics.listen))
                ctx.fail(
                    ctx.where_of_key("metrics.listen"), "metrics.listen",
                    c.metrics.listen.to_string() + " clashes with HEP over TCP on " + e.to_string() + " (hep.listen)");
        }
    }
    for (std::size_t i = 0; i < c.peers.size(); ++i) {
        for (const auto& agent : c.peers[i].agents) {
            if (std::none_of(c.agents.begin(), c.agents.end(), [&](const AgentConfig& a) { return a.name == agent; }))
                ctx.fail(ctx.where_of_key("peers"), "peers[" + std::to_string(i) + "].agents",
                         "agent " + quote(agent) + " is not named under agents");
        }
    }
    for (const auto port : c.pcap.sip_ports) {
        if (std::find(c.pcap.hep_ports.begin(), c.pcap.hep_ports.end(), port) != c.pcap.hep_ports.end())
            ctx.fail(ctx.where_of_key("pcap.sip_ports"), "pcap.sip_ports",
                     "port " + std::to_string(port) + " is also in pcap.hep_ports; a port is read as one or the other");
    }
}

// Only notes where each document starts; the tree itself comes from YAML::Load.
class DocumentCounter final : public YAML::EventHandler {
public:
    YAML::Mark last_start = YAML::Mark::null_mark();

    void OnDocumentStart(const YAML::Mark& mark) override { last_start = mark; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
};

// yaml-cpp reports its own problems (syntax, depth limit) as exceptions; they become
// ConfigError like everything else so callers deal with one type.
[[noreturn]] void rethrow_yaml(const Ctx& ctx, const YAML::Exception& e) {
    ctx.fail(where_of(e.mark), "", "invalid YAML: " + e.msg);
}

const Field* find_field(std::string_view key_path) {
    const std::vector<Field>* fields = &schema();
    const Field* found = nullptr;
    while (true) {
        const auto dot = key_path.find('.');
        const std::string_view key = key_path.substr(0, dot);
        const auto it = std::find_if(fields->begin(), fields->end(), [&](const Field& f) { return f.key == key; });
        if (it == fields->end()) return nullptr;
        found = &*it;
        if (dot == std::string_view::npos) return found;
        if (found->children.empty()) return nullptr;
        fields = &found->children;
        key_path.remove_prefix(dot + 1);
    }
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

}  // namespace

std::string_view to_string(RelayDestinationConfig::Transport t) noexcept {
    return t == RelayDestinationConfig::Transport::tcp ? "tcp" : "udp";
}

std::string relay_address(const RelayDestinationConfig& d) {
    const bool v6 = d.host.find(':') != std::string::npos;
    return (v6 ? "[" + d.host + "]" : d.host) + ":" + std::to_string(d.port);
}

Config defaults() { return Config{}; }

Config load_string(std::string_view yaml, std::string_view source_name, const Capabilities& caps) {
    Ctx ctx{std::string(source_name), {}};
    Config config = defaults();
    try {
        const std::string text(yaml);
        const YAML::Node root = YAML::Load(text);  // the first document; null when there is none
        // A second document would be silently ignored by Load, so look for one. Not with LoadAll:
        // yaml-cpp 0.7 never consumes a stray ',' outside a flow collection (e.g. "," or "[a],")
        // and reports an empty document there forever (found by config_load_fuzz). So at most
        // three documents are requested, and a third starting where the second did is that bug.
        std::istringstream stream(text);
        YAML::Parser parser(stream);
        DocumentCounter counter;
        if (parser.HandleNextDocument(counter) && parser.HandleNextDocument(counter)) {
            const YAML::Mark second = counter.last_start;
            const Where where = where_of(second);
            if (parser.HandleNextDocument(counter) && counter.last_start.pos == second.pos) {
                const auto pos = static_cast<std::size_t>(second.pos);
                const std::string_view rest = pos < text.size() ? std::string_view(text).substr(pos, 1) : "";
                ctx.fail(where, "", "invalid YAML: unexpected " + quote(rest));
            }
            ctx.fail(where, "", "expected a single YAML document, found a second one");
        }
        Where where = where_of(root);
        if (where.line == 0) where = {1, 1};
        parse_section(schema(), config, ctx, Item{root, "", where});
    } catch (const YAML::Exception& e) {
        rethrow_yaml(ctx, e);
    }
    validate(config, ctx, caps);
    return config;
}

Config load_file(const std::string& path, const Capabilities& caps) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw ConfigError(path, 0, 0, "", "cannot read the file: it is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError(path, 0, 0, "", std::string("cannot open the file: ") + error_text(errno));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw ConfigError(path, 0, 0, "", std::string("cannot read the file: ") + error_text(errno));
    return load_string(text.str(), path, caps);
}

namespace {

// One key from a flag, checked on its own (not against the rest of the configuration).
void set_override(Config& config, std::string_view key_path, std::string_view value, std::string_view flag) {
    Ctx ctx{std::string(flag), {}};
    const std::string path(key_path);
    const Field* field = find_field(key_path);
    if (field == nullptr) {
        std::string known;
        for (const auto& p : key_paths()) known += (known.empty() ? "" : ", ") + p;
        ctx.fail({}, path, "unknown key (expected one of: " + known + ")");
    }
    if (!field->children.empty()) {
        std::string known;
        for (const auto& child : field->children) known += (known.empty() ? "" : ", ") + join(path, child.key);
        ctx.fail({}, path, "is a section; set one of: " + known);
    }
    if (field->override_kind == OverrideKind::file_only)
        ctx.fail({}, path, "can only be set in the configuration file");

    YAML::Node node;
    if (field->override_kind == OverrideKind::list) {
        node = YAML::Node(YAML::NodeType::Sequence);
        // "" is the empty list; otherwise every comma separates two entries, so "a,,b" and "a,"
        // carry an empty entry that fails validation rather than being dropped.
        if (!trim(value).empty()) {
            std::string_view rest = value;
            while (true) {
                const auto comma = rest.find(',');
                node.push_back(std::string(trim(rest.substr(0, comma))));
                if (comma == std::string_view::npos) break;
                rest.remove_prefix(comma + 1);
            }
        }
    } else {
        node = YAML::Node(std::string(value));
    }
    try {
        field->parse(config, ctx, Item{node, path, {}});
    } catch (const YAML::Exception& e) {
        rethrow_yaml(ctx, e);
    }
}

}  // namespace

void apply_override(Config& config, std::string_view key_path, std::string_view value, std::string_view flag,
                    const Capabilities& caps) {
    Config updated = config;
    set_override(updated, key_path, value, flag);
    validate(updated, Ctx{std::string(flag), {}}, caps);
    config = std::move(updated);
}

void apply_overrides(Config& config, const std::vector<Override>& overrides, const Capabilities& caps) {
    Config updated = config;
    std::map<std::string, std::string, std::less<>> set_by;  // key -> the last flag that set it
    for (const auto& o : overrides) {
        set_override(updated, o.key, o.value, o.flag);
        set_by[o.key] = o.flag;
    }
    try {
        validate(updated, Ctx{"command line", {}}, caps);
    } catch (const ConfigError& e) {
        // "hep.listen[1]" was set by the flag of "hep.listen".
        const std::string& path = e.key_path();
        const auto it = set_by.find(std::string_view(path).substr(0, path.find('[')));
        if (it == set_by.end()) throw;
        throw ConfigError(it->second, e.line(), e.column(), e.key_path(), e.detail());
    }
    config = std::move(updated);
}

std::string to_yaml(const Config& config) {
    YAML::Emitter out;
    emit_section(schema(), config, out);
    return std::string(out.c_str()) + "\n";
}

std::vector<std::string> key_paths() {
    std::vector<std::string> paths;
    collect_paths(schema(), "", paths);
    return paths;
}

std::uint32_t effective_shard_count(const ShardsConfig& shards, unsigned hardware_threads, unsigned reserved_threads) {
    if (shards.count != 0) return shards.count;
    const unsigned left = hardware_threads > reserved_threads ? hardware_threads - reserved_threads : 0;
    return std::clamp<std::uint32_t>(left, 1, 1024);
}

}  // namespace hepd::config
