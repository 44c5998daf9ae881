/* plugins/comm-gloo/comm-gloo.cc: the Gloo comm module, for buffers in host memory.
 *
 * Built on Debian's libgloo (the 2022 snapshot PyTorch also used): a TCP transport device
 * (gloo::transport::tcp), a full-mesh context bootstrapped through the run's rendezvous store
 * (gloo-store.h), and Gloo's allreduce, broadcast and barrier. This is the only C++ in
 * robotrain: every exception Gloo or the C++ runtime throws is caught in this file and becomes a
 * GError, so none crosses into C.
 *
 * - f32 is reduced by Gloo directly (ring allreduce, f32 sum), then divided by the world size
 *   for RT_COMM_AVG. bf16 and f16 are widened to f32 in chunks of CHUNK elements, reduced in f32
 *   and rounded back once (to nearest, ties to even); broadcast copies their bits unchanged.
 * - The socket address each process announces: the interface named by GLOO_SOCKET_IFNAME (as
 *   in PyTorch) if set, else the local address the kernel would use to reach MASTER_ADDR (so
 *   the right interface is found on multi-homed nodes).
 * - Every operation and the bootstrap use the configured timeout. A peer that exits closes its
 *   sockets, and its neighbours fail at once; the others fail at the latest at the timeout.
 * - A peer that dies while this process writes to it would raise SIGPIPE, which kills by
 *   default: init ignores SIGPIPE when its disposition is still the default (write then fails
 *   with EPIPE, which Gloo reports). */
#include "config.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <robotrain/comm.h>
#include <robotrain/error.h>
#include <robotrain/plugin.h>

#include "gloo-store.h"
#include "half.h"

/* Elements of bf16/f16 widened to f32 at a time: the scratch buffer is 4 MiB at most. */
#define CHUNK ((size_t)1 << 20)

struct rt_comm_ctx {
    int rank = 0;
    int size = 1;
    unsigned timeout_ms = 0;
    std::string where; /* "rank R of N" for messages */
    std::shared_ptr<gloo::transport::Device> device;
    std::shared_ptr<gloo::rendezvous::Context> context;
    std::vector<float> scratch; /* for bf16/f16, grown once */
    std::atomic<bool> aborted{ false };
};

/* Runs body, turning any exception into error (RT_ERROR_NETWORK for Gloo's and the store's
 * I/O errors and timeouts, RT_ERROR_FAILED otherwise) with what and the timeout in the text. */
template <typename Body>
static gboolean guarded(const rt_comm_ctx *ctx, const std::string &what, GError **error, Body &&body)
{
    try {
        body();
        return TRUE;
    } catch (const rt_gloo::StoreError &e) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "gloo %s: %s: %s", what.c_str(), ctx->where.c_str(), e.what());
    } catch (const gloo::IoException &e) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "gloo %s: %s: %s (timeout %.1f s; has another rank failed or exited?)", what.c_str(),
                    ctx->where.c_str(), e.what(), ctx->timeout_ms / 1000.0);
    } catch (const std::bad_alloc &) {
        g_set_error(error, RT_ERROR, RT_ERROR_FAILED, "gloo %s: %s: out of memory", what.c_str(), ctx->where.c_str());
    } catch (const std::exception &e) {
        g_set_error(error, RT_ERROR, RT_ERROR_FAILED, "gloo %s: %s: %s", what.c_str(), ctx->where.c_str(), e.what());
    } catch (...) {
        g_set_error(error, RT_ERROR, RT_ERROR_FAILED, "gloo %s: %s: unknown C++ exception", what.c_str(),
                    ctx->where.c_str());
    }
    return FALSE;
}

/* The local IPv4/IPv6 address this host uses to reach host:port (connecting a UDP socket
 * sends nothing), or "" when it cannot be found. */
static std::string local_address_towards(const char *host, uint16_t port)
{
    struct addrinfo hints = {}, *list = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    std::string service = std::to_string(port);
    if (getaddrinfo(host, service.c_str(), &hints, &list) != 0)
        return "";
    std::string found;
    for (struct addrinfo *a = list; a && found.empty(); a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        struct sockaddr_storage local;
        socklen_t len = sizeof local;
        char text[INET6_ADDRSTRLEN] = "";
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
            getsockname(fd, reinterpret_cast<struct sockaddr *>(&local), &len) == 0) {
            const void *raw = local.ss_family == AF_INET6
                                  ? static_cast<const void *>(&reinterpret_cast<struct sockaddr_in6 *>(&local)->sin6_addr)
                                  : static_cast<const void *>(&reinterpret_cast<struct sockaddr_in *>(&local)->sin_addr);
            if (inet_ntop(local.ss_family, raw, text, sizeof text))
                found = text;
        }
        close(fd);
    }
    freeaddrinfo(list);
    return found;
}

/* Ignores SIGPIPE unless the program chose a disposition itself. */
static void ignore_sigpipe(void)
{
    struct sigaction current;
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL &&
        !(current.sa_flags & SA_SIGINFO)) {
        struct sigaction ignore = {};
        ignore.sa_handler = SIG_IGN;
        sigemptyset(&ignore.sa_mask);
        sigaction(SIGPIPE, &ignore, nullptr);
    }
}

static void gloo_destroy(rt_comm_ctx *ctx)
{
    if (!ctx)
        return;
    try {
        /* The context's pairs use the device: drop the context first. */
        ctx->context.reset();
        ctx->device.reset();
    } catch (...) {
        g_warning("gloo: %s: an exception while closing the communicator was ignored", ctx->where.c_str());
    }
    delete ctx;
}

static rt_comm_ctx *gloo_init(const rt_world *world, rt_store *store, const rt_comm_config *config, GError **error)
{
    rt_comm_ctx *ctx = new (std::nothrow) rt_comm_ctx;
    if (!ctx) {
        g_set_error(error, RT_ERROR, RT_ERROR_FAILED, "gloo init: out of memory");
        return nullptr;
    }
    ctx->rank = world->rank;
    ctx->size = world->world_size;
    ctx->timeout_ms = config->timeout_ms;
    ctx->where = "rank " + std::to_string(world->rank) + " of " + std::to_string(world->world_size);
    ignore_sigpipe();

    std::string what = std::string("bootstrap of communicator '") + config->name + "' through the store at " +
                       rt_store_get_address(store);
    gboolean ok = guarded(ctx, what, error, [&] {
        gloo::transport::tcp::attr attr;
        const char *iface = g_getenv("GLOO_SOCKET_IFNAME");
        if (iface && *iface) {
            if (if_nametoindex(iface) == 0)
                throw std::runtime_error(std::string("GLOO_SOCKET_IFNAME=") + iface +
                                         ": no such network interface on this host (`ip -brief address` lists them)");
            attr.iface = iface;
        } else {
            attr.hostname = world->world_size == 1 ? std::string("127.0.0.1")
                                                   : local_address_towards(world->master_addr, world->store_port);
            if (attr.hostname.empty())
                throw std::runtime_error(std::string("cannot find a local address that reaches MASTER_ADDR=") +
                                         world->master_addr + ": set GLOO_SOCKET_IFNAME to the network interface to use");
        }
        ctx->device = gloo::transport::tcp::CreateDevice(attr);

        /* Each process counts its own communicators of this name, so a second communicator
         * of the same name (all ranks create them in the same order) gets fresh keys. */
        std::string base = std::string("comm/gloo/") + config->name + "/";
        std::string counter = base + "created/" + std::to_string(world->rank);
        GError *store_error = nullptr;
        int64_t generation = 0;
        if (!rt_store_add(store, counter.c_str(), 1, &generation, &store_error)) {
            std::string message = store_error->message;
            g_clear_error(&store_error);
            throw rt_gloo::StoreError(message);
        }
        rt_gloo::Store adapter(store, base + std::to_string(generation) + "/", config->timeout_ms);

        ctx->context = std::make_shared<gloo::rendezvous::Context>(world->rank, world->world_size);
        ctx->context->setTimeout(std::chrono::milliseconds(config->timeout_ms));
        ctx->context->connectFullMesh(adapter, ctx->device);
    });
    if (!ok) {
        gloo_destroy(ctx);
        return nullptr;
    }
    g_debug("gloo: %s connected (%s)", ctx->where.c_str(), ctx->device->str().c_str());
    return ctx;
}

/* Sums n floats in place across all ranks. */
static void allreduce_f32(rt_comm_ctx *ctx, float *data, size_t n)
{
    gloo::AllreduceOptions opts(ctx->context);
    opts.setOutput<float>(data, n);
    opts.setReduceFunction(static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::sum<float>));
    opts.setTimeout(std::chrono::milliseconds(ctx->timeout_ms));
    gloo::allreduce(opts);
}

static std::string describe(const char *op, size_t count, rt_comm_dtype dtype)
{
    return std::string(op) + " of " + std::to_string(count) + " " + rt_comm_dtype_name(dtype) + " elements";
}

static gboolean gloo_allreduce(rt_comm_ctx *ctx, void *data, size_t count, rt_comm_dtype dtype, rt_comm_op op,
                               GError **error)
{
    if (count == 0 || ctx->size == 1) /* alone, the sum and the average are the data */
        return TRUE;
    return guarded(ctx, describe(op == RT_COMM_AVG ? "allreduce (avg)" : "allreduce (sum)", count, dtype), error, [&] {
        const float divisor = static_cast<float>(ctx->size);
        if (dtype == RT_COMM_F32) {
            float *f = static_cast<float *>(data);
            allreduce_f32(ctx, f, count);
            if (op == RT_COMM_AVG)
                for (size_t i = 0; i < count; i++)
                    f[i] /= divisor;
            return;
        }
        uint16_t *h = static_cast<uint16_t *>(data);
        const bool bf16 = dtype == RT_COMM_BF16;
        ctx->scratch.resize(std::min(count, CHUNK));
        float *f = ctx->scratch.data();
        for (size_t start = 0; start < count; start += CHUNK) {
            size_t n = std::min(CHUNK, count - start);
            for (size_t i = 0; i < n; i++)
                f[i] = bf16 ? rt_gloo::bf16_to_f32(h[start + i]) : rt_gloo::f16_to_f32(h[start + i]);
            allreduce_f32(ctx, f, n);
            if (op == RT_COMM_AVG)
                for (size_t i = 0; i < n; i++)
                    f[i] /= divisor;
            for (size_t i = 0; i < n; i++)
                h[start + i] = bf16 ? rt_gloo::f32_to_bf16(f[i]) : rt_gloo::f32_to_f16(f[i]);
        }
    });
}

static gboolean gloo_broadcast(rt_comm_ctx *ctx, void *data, size_t count, rt_comm_dtype dtype, int root,
                               GError **error)
{
    if (count == 0 || ctx->size == 1)
        return TRUE;
    return guarded(ctx, describe("broadcast", count, dtype) + " from rank " + std::to_string(root), error, [&] {
        gloo::BroadcastOptions opts(ctx->context);
        /* The bits are copied, not interpreted: 16-bit types travel as uint16_t. */
        if (dtype == RT_COMM_F32)
            opts.setOutput<float>(static_cast<float *>(data), count);
        else
            opts.setOutput<uint16_t>(static_cast<uint16_t *>(data), count);
        opts.setRoot(root);
        opts.setTimeout(std::chrono::milliseconds(ctx->timeout_ms));
        gloo::broadcast(opts);
    });
}

static gboolean gloo_barrier(rt_comm_ctx *ctx, GError **error)
{
    if (ctx->size == 1)
        return TRUE;
    return guarded(ctx, "barrier", error, [&] {
        gloo::BarrierOptions opts(ctx->context);
        opts.setTimeout(std::chrono::milliseconds(ctx->timeout_ms));
        gloo::barrier(opts);
    });
}

/* Closes every connection (peers see it at once); an operation blocked in another thread
 * fails when it next touches a connection, at the latest at its timeout. */
static void gloo_abort(rt_comm_ctx *ctx)
{
    if (ctx->aborted.exchange(true))
        return;
    try {
        if (ctx->context)
            ctx->context->closeConnections();
    } catch (...) {
        /* Aborting is best effort; the communicator is unusable either way. */
    }
}

static const rt_comm_i gloo_iface = {
    sizeof(rt_comm_i),
    "host",
    gloo_init,
    gloo_allreduce,
    gloo_broadcast,
    gloo_barrier,
    gloo_abort,
    gloo_destroy,
    nullptr, /* allreduce_async: collectives on the host are blocking */
    nullptr, /* broadcast_async */
    nullptr, /* wait_stream */
    nullptr, /* synchronize */
    {},
};

extern "C" {
RT_PLUGIN_DEFINE(gloo, RT_PLUGIN_COMM, PACKAGE_VERSION, "Apache-2.0",
                 "Gloo collectives (TCP) for CPU tensors: allreduce, broadcast, barrier", nullptr, 0, &gloo_iface)
}
