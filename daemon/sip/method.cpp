#include "sip/method.hpp"

namespace hepd::sip {

Method parse_method(std::string_view token) noexcept {
    // Dispatch on length first: every standard method has a distinct (length, first byte) pair,
    // so at most one full comparison is made.
    switch (token.size()) {
    case 3:
        if (token == "BYE") return Method::bye;
        if (token == "ACK") return Method::ack;
        break;
    case 4:
        if (token == "INFO") return Method::info;
        break;
    case 5:
        if (token == "PRACK") return Method::prack;
        if (token == "REFER") return Method::refer;
        break;
    case 6:
        if (token == "INVITE") return Method::invite;
        if (token == "CANCEL") return Method::cancel;
        if (token == "NOTIFY") return Method::notify;
        if (token == "UPDATE") return Method::update;
        break;
    case 7:
        if (token == "OPTIONS") return Method::options;
        if (token == "PUBLISH") return Method::publish;
        if (token == "MESSAGE") return Method::message;
        break;
    case 8:
        if (token == "REGISTER") return Method::register_;
        break;
    case 9:
        if (token == "SUBSCRIBE") return Method::subscribe;
        break;
    default: break;
    }
    return Method::other;
}

std::string_view to_string(Method method) noexcept {
    switch (method) {
    case Method::other: return "other";
    case Method::invite: return "INVITE";
    case Method::ack: return "ACK";
    case Method::bye: return "BYE";
    case Method::cancel: return "CANCEL";
    case Method::register_: return "REGISTER";
    case Method::options: return "OPTIONS";
    case Method::subscribe: return "SUBSCRIBE";
    case Method::notify: return "NOTIFY";
    case Method::publish: return "PUBLISH";
    case Method::message: return "MESSAGE";
    case Method::info: return "INFO";
    case Method::prack: return "PRACK";
    case Method::update: return "UPDATE";
    case Method::refer: return "REFER";
    }
    return "other";
}

}  // namespace hepd::sip
