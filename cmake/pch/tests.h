// The test executables' precompiled header: the libraries' common one and the test framework.
#pragma once

#include "cmake/pch/common.h"
#include "tests/catch.h"
