// The request to run a command for a repository: what Node::Run and
// Node::Start take, and what a service client sends. Plain data, with no
// dependency beyond the standard library, so that a program that only talks
// to the service (mojoup/service/client.h) compiles against it without the
// rest of the sandbox library.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace mojoup {

// A command to run for a repository, in a sandbox if the decision says so.
struct RunRequest {
  std::string workdir = ".";  // where the command starts, inside the repository
  std::string tool;           // the agent tool ("claude-code", ...), "" for none
  std::vector<std::string> command;
  // NAME[=HOST,...]: $NAME stays outside; the sandbox gets a stand-in that
  // the session proxy swaps for it on the way to HOST (`run --credential`).
  std::vector<std::string> credentials;
  std::vector<std::string> resolve;  // HOST:PORT:ADDR pins for the proxy
  std::string upstream_ca;           // PEM file of extra CAs the proxy trusts upstream
  std::string audit_file;            // the proxy appends one JSON line per decision
  // Use the repository's policy although it changed while a sandboxed
  // session ran: the caller says the change is theirs.
  bool accept_policy = false;
  // The caller's stdin and stdout are a terminal: the sandbox gets one when
  // its runtime can give one.
  bool terminal = false;
  // The caller's stdin is a terminal: a runtime that cannot stream one gives
  // the command no input rather than wait for the terminal to end.
  bool terminal_input = false;
  std::map<std::string, std::string> environment;  // added to the sandbox's
  // The session's id, 16 lowercase hex digits; empty: a new one.
  std::string session_id;
};

}  // namespace mojoup
