#pragma once
// The headers that most test sources parse, precompiled once (tests/CMakeLists.txt,
// NENDO_PRECOMPILED_HEADERS): parsing them was two thirds of a test's compile time.
#include <gtest/gtest.h>
#include <mpi.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "support/MethodRun.hpp"
