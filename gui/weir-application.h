/* weir-application.h — the workbench application (app.* actions).
 *
 * WeirApplication opens files given on the command line, by the Open
 * dialog, from Open Recent or by drag and drop: into the active window when
 * it shows nothing yet, else into a new window.  It sets the keyboard
 * shortcuts of every action (listed in docs/gui.md and in the shortcuts
 * window, gtk/help-overlay.ui).
 */
#ifndef WEIR_APPLICATION_H
#define WEIR_APPLICATION_H

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define WEIR_APPLICATION_ID "org.weir.Workbench"

#define WEIR_TYPE_APPLICATION (weir_application_get_type())
G_DECLARE_FINAL_TYPE(WeirApplication, weir_application, WEIR, APPLICATION,
                     GtkApplication)

WeirApplication *weir_application_new(void);

G_END_DECLS

#endif
