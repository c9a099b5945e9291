// The headers nearly every test file parses, compiled once per preset into
// the precompiled header the test programs share (tests/CMakeLists.txt):
// Catch2 alone is over a second of each file's compile. Third-party and
// standard headers only, so that a change to the project's own headers
// does not rebuild it.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "rapidjson/document.h"
