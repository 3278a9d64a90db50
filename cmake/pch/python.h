// The Python module's precompiled header: the libraries' common one and pybind11.
#pragma once

#include "cmake/pch/common.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
