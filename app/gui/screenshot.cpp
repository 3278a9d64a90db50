#include "app/gui/screenshot.h"

#include "app/report/atomic_dir.h"
#include "app/report/png_text.h"
#include "core/error.h"

#include <GLFW/glfw3.h>
#include <stb/stb_image_write.h>

#include <vector>

namespace attnlab::gui {

std::string write_screenshot(const std::string& path, int width, int height) {
  std::vector<unsigned char> pixels(size_t(width) * size_t(height) * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, pixels.data());
  if (glGetError() != GL_NO_ERROR) return "could not read the frame back from OpenGL";
  stbi_flip_vertically_on_write(1);  // OpenGL's rows run bottom-up
  std::string png;
  const auto append = [](void* out, void* data, int size) { static_cast<std::string*>(out)->append(static_cast<char*>(data), size); };
  if (!stbi_write_png_to_func(append, &png, width, height, 3, pixels.data(), width * 3)) return "could not encode the PNG";
  try {  // the one output rule of every front end (app/report/output_path.h), written atomically; the
         // Software text marks the PNG as attnlab's, which a later --screenshot may replace
    report::write_output_file(path, report::with_software_text(png), {"--screenshot", {}, false},
                              report::OutputKind::screenshot_png);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace attnlab::gui
