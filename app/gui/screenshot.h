// attnlab gui: the current OpenGL back buffer as a PNG (stb_image_write, Debian's libstb).
#pragma once

#include <string>

namespace attnlab::gui {

// Reads the width × height back buffer and writes it to `path` under the output-file rule
// (app/report/output_path.h); returns "" or why it could not.
std::string write_screenshot(const std::string& path, int width, int height);

}  // namespace attnlab::gui
