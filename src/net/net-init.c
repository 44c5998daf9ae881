/* curl_global_init exactly once per process. It is not thread-safe itself (with older libcurl),
 * so a GOnce guards it; curl_global_cleanup is never called, since other threads or libraries of
 * the process may still use libcurl at exit. */
#include "config.h"

#include <curl/curl.h>
#include <glib.h>

#include "net/net-init.h"

static gpointer net_init_once(gpointer unused)
{
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK)
        g_warning("libcurl could not be initialised (%s): network transfers will fail",
                  curl_easy_strerror(rc));
    return NULL;
}

void rt_net_global_init(void)
{
    static GOnce once = G_ONCE_INIT;
    g_once(&once, net_init_once, NULL);
}
