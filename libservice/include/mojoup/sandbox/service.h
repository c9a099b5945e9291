// The service's client and server in one include, as they were before the
// service had a layer of its own: new code includes mojoup/service/client.h
// or mojoup/service/server.h.
#pragma once

// IWYU pragma: begin_exports
#include "mojoup/service/client.h"
#include "mojoup/service/server.h"
// IWYU pragma: end_exports
