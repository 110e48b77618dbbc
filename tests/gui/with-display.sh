#!/bin/sh
# with-display.sh PROGRAM [ARGS...]: runs a GUI test on the display it is
# given, or else on a private Xvfb server (xvfb-run), so that
# `meson test` runs the GUI tests in a real window on a machine without a
# desktop. Without either the test itself exits 77 (skipped).
if [ -n "$DISPLAY" ] || [ -n "$WAYLAND_DISPLAY" ]; then
  exec "$@"
fi
if command -v xvfb-run >/dev/null 2>&1; then
  exec xvfb-run -a -s "-screen 0 1280x800x24" "$@"
fi
exec "$@"
