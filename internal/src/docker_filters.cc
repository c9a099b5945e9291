#include "mojoup/internal/docker_filters.h"

#include "mojoup/internal/json_codec.h"
#include "mojoup/internal/percent_encode.h"

namespace mojoup::internal {
namespace {

struct LabelFilters {
  std::vector<std::string> label;
};
constexpr auto kLabelFilters =
    json::Message<LabelFilters>(json::Field("label", &LabelFilters::label));

}  // namespace

std::string DockerLabelFilters(const std::vector<std::string>& labels) {
  return PercentEncode(json::ToJson(LabelFilters{labels}, kLabelFilters));
}

}  // namespace mojoup::internal
