#include "scrape.hpp"

#include <prometheus/text_serializer.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

namespace hepd::test {

namespace {

class Fd {
public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

[[noreturn]] void fail_errno(const std::string& what) { throw std::runtime_error(what + ": " + std::strerror(errno)); }

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return std::string(s);
}

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

double parse_number(std::string_view text, const std::string& line) {
    if (text == "+Inf" || text == "Inf") return std::numeric_limits<double>::infinity();
    if (text == "-Inf") return -std::numeric_limits<double>::infinity();
    if (text == "NaN" || text == "Nan") return std::numeric_limits<double>::quiet_NaN();
    const std::string s(text);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) throw std::runtime_error("bad number in line: " + line);
    return v;
}

Sample parse_sample(const std::string& line) {
    Sample s;
    std::size_t i = 0;
    if (line.empty() || !name_start(line[0])) throw std::runtime_error("bad metric name in line: " + line);
    while (i < line.size() && name_char(line[i])) ++i;
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
        ++i;
        while (true) {
            if (i >= line.size()) throw std::runtime_error("unterminated labels in line: " + line);
            if (line[i] == '}') {
                ++i;
                break;
            }
            const std::size_t start = i;
            if (!name_start(line[i])) throw std::runtime_error("bad label name in line: " + line);
            while (i < line.size() && name_char(line[i])) ++i;
            const std::string label = line.substr(start, i - start);
            if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
                throw std::runtime_error("expected =\" in line: " + line);
            i += 2;
            std::string value;
            while (true) {
                if (i >= line.size()) throw std::runtime_error("unterminated label value in line: " + line);
                const char c = line[i++];
                if (c == '"') break;
                if (c == '\\') {
                    if (i >= line.size()) throw std::runtime_error("dangling escape in line: " + line);
                    const char e = line[i++];
                    if (e == 'n')
                        value += '\n';
                    else if (e == '\\' || e == '"')
                        value += e;
                    else
                        throw std::runtime_error("bad escape in line: " + line);
                } else {
                    value += c;
                }
            }
            if (!s.labels.emplace(label, value).second) throw std::runtime_error("repeated label in line: " + line);
            if (i < line.size() && line[i] == ',') ++i;
        }
    }
    if (i >= line.size() || line[i] != ' ') throw std::runtime_error("expected a space before the value: " + line);
    ++i;
    const std::size_t space = line.find(' ', i);
    s.value = parse_number(std::string_view(line).substr(i, space == std::string::npos ? std::string::npos : space - i),
                           line);
    if (space != std::string::npos) parse_number(std::string_view(line).substr(space + 1), line);  // timestamp
    return s;
}

bool includes(const Labels& labels, const Labels& subset) {
    for (const auto& [k, v] : subset) {
        const auto it = labels.find(k);
        if (it == labels.end() || it->second != v) return false;
    }
    return true;
}

}  // namespace

HttpResponse http_request(std::uint16_t port, const std::string& method, const std::string& path,
                          std::chrono::milliseconds timeout) {
    const Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) fail_errno("socket");
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    // Linux applies SO_SNDTIMEO to connect() as well: no step can hang the test.
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) fail_errno("connect");

    const std::string request = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                                "\r\nUser-Agent: hepd-export-test\r\nAccept: text/plain\r\nConnection: close\r\n\r\n";
    std::size_t sent = 0;
    while (sent < request.size()) {
        const ssize_t n = ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) fail_errno("send");
        sent += static_cast<std::size_t>(n);
    }
    std::string raw;
    char buffer[16384];
    while (true) {
        const ssize_t n = ::recv(fd.get(), buffer, sizeof buffer, 0);
        if (n == 0) break;
        if (n < 0) fail_errno("recv");
        raw.append(buffer, static_cast<std::size_t>(n));
    }

    const std::size_t head_end = raw.find("\r\n\r\n");
    if (head_end == std::string::npos || raw.rfind("HTTP/1.", 0) != 0)
        throw std::runtime_error("not an HTTP response: " + raw.substr(0, 80));
    HttpResponse r;
    const std::size_t first_eol = raw.find("\r\n");
    r.status = std::atoi(raw.substr(9, 3).c_str());
    std::size_t at = first_eol + 2;
    while (at < head_end) {
        const std::size_t eol = raw.find("\r\n", at);
        const std::string line = raw.substr(at, eol - at);
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) throw std::runtime_error("bad header line: " + line);
        r.headers[lower(line.substr(0, colon))] = trim(std::string_view(line).substr(colon + 1));
        at = eol + 2;
    }
    r.body = raw.substr(head_end + 4);
    if (const auto it = r.headers.find("content-length"); it != r.headers.end() && method != "HEAD") {
        if (std::stoull(it->second) != r.body.size())
            throw std::runtime_error("Content-Length " + it->second + " but " + std::to_string(r.body.size()) +
                                     " bytes of body");
    }
    return r;
}

std::string Exposition::family_of(const std::string& sample_name) const {
    if (types.count(sample_name) != 0) return sample_name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        const std::string_view s(suffix);
        if (sample_name.size() > s.size() && sample_name.compare(sample_name.size() - s.size(), s.size(), s) == 0) {
            const std::string base = sample_name.substr(0, sample_name.size() - s.size());
            const auto it = types.find(base);
            if (it != types.end() && (it->second == "histogram" || it->second == "summary")) return base;
        }
    }
    return {};
}

std::optional<double> Exposition::value(const std::string& name, const Labels& labels) const {
    for (const auto& s : samples)
        if (s.name == name && s.labels == labels) return s.value;
    return std::nullopt;
}

double Exposition::at(const std::string& name, const Labels& labels) const {
    if (const auto v = value(name, labels)) return *v;
    std::string text = name + "{";
    for (const auto& [k, v] : labels) text += k + "=\"" + v + "\",";
    throw std::runtime_error("no sample " + text + "}");
}

double Exposition::sum(const std::string& name, const Labels& subset) const {
    double total = 0;
    for (const auto& s : samples)
        if (s.name == name && includes(s.labels, subset)) total += s.value;
    return total;
}

double Exposition::bucket(const std::string& family, double le, const Labels& labels) const {
    for (const auto& s : samples) {
        if (s.name != family + "_bucket") continue;
        Labels rest = s.labels;
        const auto it = rest.find("le");
        if (it == rest.end()) continue;
        const double bound = parse_number(it->second, s.name);
        rest.erase(it);
        if (rest == labels && bound == le) return s.value;
    }
    throw std::runtime_error("no bucket le=" + std::to_string(le) + " of " + family);
}

std::vector<const Sample*> Exposition::find(const std::string& name) const {
    std::vector<const Sample*> out;
    for (const auto& s : samples)
        if (s.name == name) out.push_back(&s);
    return out;
}

Exposition parse_exposition(std::string_view text) {
    Exposition e;
    std::set<std::pair<std::string, Labels>> seen;
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t eol = text.find('\n', at);
        if (eol == std::string_view::npos) throw std::runtime_error("exposition does not end with a newline");
        const std::string line(text.substr(at, eol - at));
        at = eol + 1;
        if (line.empty()) continue;
        if (line[0] == '#') {
            if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
                const std::string rest = line.substr(7);
                const std::size_t space = rest.find(' ');
                if (space == std::string::npos) throw std::runtime_error("bad comment line: " + line);
                const std::string name = rest.substr(0, space);
                auto& into = line[2] == 'H' ? e.helps : e.types;
                if (!into.emplace(name, rest.substr(space + 1)).second)
                    throw std::runtime_error("repeated comment line: " + line);
            }
            continue;
        }
        Sample s = parse_sample(line);
        if (e.family_of(s.name).empty()) throw std::runtime_error("sample without a # TYPE line: " + line);
        if (!seen.emplace(s.name, s.labels).second) throw std::runtime_error("repeated series: " + line);
        e.samples.push_back(std::move(s));
    }
    return e;
}

Exposition to_exposition(const std::vector<prometheus::MetricFamily>& families) {
    return parse_exposition(prometheus::TextSerializer().Serialize(families));
}

}  // namespace hepd::test
