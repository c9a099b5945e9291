// bench_git_places: what the repository walk adds to a session's start and
// end. A tree of 100,000 files in 5,000 directories (a large node_modules),
// walked by FindGitPlaces and DisarmGitPlaces, side by side with
// `find TREE -ls` (which also reads every entry's status) as the reference;
// prints each one's median of 7 runs and the ratios.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "guard/git_places.h"
#include "timing.h"

namespace fs = std::filesystem;
using mojoup::sandbox::DisarmGitPlaces;
using mojoup::sandbox::FindGitPlaces;

int main(int argc, char** argv) {
  const int directories = argc > 1 ? std::atoi(argv[1]) : 5000;
  constexpr int kFilesPerDirectory = 20;
  constexpr int kRuns = 7;
  char pattern[] = "/tmp/mojoup-bench-places-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return 1;
  const std::string root = pattern;
  for (int d = 0; d < directories; ++d) {
    const std::string dir =
        root + "/node_modules/p" + std::to_string(d % 100) + "/m" + std::to_string(d);
    fs::create_directories(dir);
    for (int f = 0; f < kFilesPerDirectory; ++f) std::ofstream(dir + "/f" + std::to_string(f));
  }
  fs::create_directories(root + "/.git/objects");
  fs::create_directories(root + "/.git/refs");
  std::ofstream(root + "/.git/HEAD") << "ref: refs/heads/main\n";

  auto median = [](std::vector<double> times) {
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  std::vector<double> find_ms, before_ms, after_ms;
  int exit_code = 0;
  mojoup::sandbox::GitPlaces places;
  for (int run = 0; run < kRuns; ++run) {
    find_ms.push_back(mojoup::bench::TimeOnce({"find", root, "-ls"}, &exit_code));
    auto start = std::chrono::steady_clock::now();
    places = *FindGitPlaces(root, {root + "/.git"}, {});
    before_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    std::vector<std::string> notices, errors;
    start = std::chrono::steady_clock::now();
    DisarmGitPlaces(root, places, "0123456789abcdef", notices, errors);
    after_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  const double find = median(find_ms), before = median(before_ms), after = median(after_ms);
  std::printf("tree: %d files in %d directories\n", directories * kFilesPerDirectory, directories);
  std::printf("find -ls (reference)   %8.1f ms\n", find);
  std::printf("FindGitPlaces (start)  %8.1f ms  %.2fx find\n", before, before / find);
  std::printf("DisarmGitPlaces (end)  %8.1f ms  %.2fx find\n", after, after / find);
  fs::remove_all(root);
  return 0;
}
