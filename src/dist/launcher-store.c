/* What the launcher hosts for its workers: the rendezvous store on machine rank 0. */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gio/gio.h>

#include <robotrain/error.h>

#include "dist/launcher.h"

static gboolean is_loopback(const char *host)
{
    if (g_ascii_strcasecmp(host, "localhost") == 0)
        return TRUE;
    GInetAddress *addr = g_inet_address_new_from_string(host);
    gboolean loopback = addr && g_inet_address_get_is_loopback(addr);
    g_clear_object(&addr);
    return loopback;
}

/* A free TCP port on the loopback interface (for a single worker, which starts its own store:
 * it only has to be a plausible MASTER_PORT). */
static gboolean pick_free_port(uint16_t *port, GError **error)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {
        .sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    gboolean ok = fd >= 0 && bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
                  getsockname(fd, (struct sockaddr *)&addr, &len) == 0;
    int saved = errno;
    if (fd >= 0)
        close(fd);
    if (!ok) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "cannot find a free TCP port on 127.0.0.1: %s",
                    g_strerror(saved));
        return FALSE;
    }
    *port = ntohs(addr.sin_port);
    return TRUE;
}

gboolean rt_launcher_host_store(rt_launch_plan *plan, rt_store_server **server, GError **error)
{
    g_return_val_if_fail(plan != NULL && server != NULL, FALSE);
    *server = NULL;
    if (!plan->host_store)
        return plan->master_port != 0 || plan->world_size > 1 || pick_free_port(&plan->master_port, error);

    const char *host = is_loopback(plan->master_addr) ? plan->master_addr : NULL;
    GError *local = NULL;
    *server = rt_store_server_new(host, plan->master_port, plan->run_id, &local);
    if (!*server) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "cannot host the rendezvous on port %u (main_process_port): %s%s", plan->master_port,
                    local->message,
                    plan->num_machines == 1 ? "; with --main_process_port=0 the launcher picks a free port"
                                            : "");
        g_error_free(local);
        return FALSE;
    }
    plan->master_port = rt_store_server_get_port(*server);
    return TRUE;
}
