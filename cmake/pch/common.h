// The headers nearly every attnlab translation unit parses, precompiled once per target
// (cmake/build_time.cmake says why). Only third-party and standard headers: a change to attnlab's
// own headers never rebuilds the precompiled header.
#pragma once

#include <Eigen/Core>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
