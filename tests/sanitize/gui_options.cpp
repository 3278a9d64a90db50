// attnlab sanitizer build: linked into attnlab-gui only (top-level CMakeLists.txt). Leak detection is off
// for the GUI: under Xvfb it draws through Mesa's software OpenGL driver, which the GL library loads and
// unloads itself and whose allocations outlive it, so LeakSanitizer reports them from an "<unknown
// module>" that no suppression can name. Every other check (ASan's memory errors, UBSan) stays on, and the
// CLI and the test suite keep leak detection.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
