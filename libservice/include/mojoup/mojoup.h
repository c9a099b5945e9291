// The whole public API of the mojoup sandbox library in one include: host
// checks (mojoup/probe/), policies and the sandbox decision (mojoup/policy/),
// the credential proxy (mojoup/credproxy/), sessions and runtimes
// (mojoup/sandbox/), the node facade (mojoup::Node), the sandbox service's
// client and server (mojoup/service/) and the library's version.
//
//   #include "mojoup/mojoup.h"
//
//   auto node = mojoup::Node::Open({});
//   if (node.ok()) std::cout << node->Doctor().verdict.Line() << "\n";
//
// Including only the headers a file uses compiles faster; this one is for
// programs that would rather not pick. The test doubles (mojoup/*/testing/)
// are a separate library and are not included here.
#pragma once

// IWYU pragma: begin_exports
#include "mojoup/credproxy/proxy.h"
#include "mojoup/credproxy/session_ca.h"
#include "mojoup/credproxy/vault.h"
#include "mojoup/policy/decision.h"
#include "mojoup/policy/effective_policy.h"
#include "mojoup/policy/explain.h"
#include "mojoup/policy/network_rules.h"
#include "mojoup/policy/node_config.h"
#include "mojoup/policy/policy.h"
#include "mojoup/policy/tool_profiles.h"
#include "mojoup/probe/command_runner.h"
#include "mojoup/probe/docker_api.h"
#include "mojoup/probe/kernel.h"
#include "mojoup/probe/minimums.h"
#include "mojoup/probe/openshell_cli.h"
#include "mojoup/probe/openshell_gateway.h"
#include "mojoup/probe/probe.h"
#include "mojoup/probe/report.h"
#include "mojoup/probe/semver.h"
#include "mojoup/sandbox/agent_image.h"
#include "mojoup/sandbox/audit_ocsf.h"
#include "mojoup/sandbox/audit_reader.h"
#include "mojoup/sandbox/backend.h"
#include "mojoup/sandbox/foreground.h"
#include "mojoup/sandbox/mount.h"
#include "mojoup/sandbox/native_backend.h"
#include "mojoup/sandbox/node.h"
#include "mojoup/sandbox/openshell_backend.h"
#include "mojoup/sandbox/openshell_policy.h"
#include "mojoup/sandbox/policy_watch.h"
#include "mojoup/sandbox/run_request.h"
#include "mojoup/sandbox/service.h"
#include "mojoup/sandbox/session.h"
#include "mojoup/sandbox/signin.h"
#include "mojoup/sandbox/stdio.h"
#include "mojoup/service/anywhere.h"
#include "mojoup/service/client.h"
#include "mojoup/service/reason.h"
#include "mojoup/service/server.h"
#include "mojoup/service/setup.h"
#include "mojoup/version.h"
// IWYU pragma: end_exports
