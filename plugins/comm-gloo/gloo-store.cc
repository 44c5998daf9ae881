/* Gloo's rendezvous store interface over robotrain's store client. */
#include "config.h"

#include "gloo-store.h"

#include <algorithm>

namespace rt_gloo {

/* Throws the error's message as a StoreError and frees the error. */
[[noreturn]] static void fail(GError *error)
{
    std::string message = error ? error->message : "rendezvous store call failed";
    g_clear_error(&error);
    throw StoreError(message);
}

Store::Store(rt_store *store, std::string prefix, unsigned timeout_ms)
    : store_(store), prefix_(std::move(prefix)), timeout_ms_(timeout_ms)
{
}

void Store::set(const std::string &key, const std::vector<char> &data)
{
    GError *error = nullptr;
    std::string full = prefix_ + key;
    if (!rt_store_set(store_, full.c_str(), data.data(), data.size(), &error))
        fail(error);
}

/* Gloo's get expects the key to appear (its own stores wait for it), so this one waits too. */
std::vector<char> Store::get(const std::string &key)
{
    GError *error = nullptr;
    std::string full = prefix_ + key;
    GBytes *value = rt_store_get(store_, full.c_str(), timeout_ms_, &error);
    if (!value)
        fail(error);
    gsize size = 0;
    const char *data = static_cast<const char *>(g_bytes_get_data(value, &size));
    std::vector<char> out(data, data + size);
    g_bytes_unref(value);
    return out;
}

void Store::wait(const std::vector<std::string> &keys)
{
    wait(keys, std::chrono::milliseconds(timeout_ms_));
}

void Store::wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &timeout)
{
    if (keys.empty())
        return;
    std::vector<std::string> full;
    std::vector<const char *> pointers;
    full.reserve(keys.size());
    for (const auto &key : keys)
        full.push_back(prefix_ + key);
    for (const auto &key : full)
        pointers.push_back(key.c_str());
    /* Gloo passes its context's timeout; zero or negative (no timeout) becomes ours. */
    long long ms = timeout.count();
    unsigned wait_ms = ms > 0 ? static_cast<unsigned>(std::min<long long>(ms, RT_STORE_DEFAULT_TIMEOUT - 1))
                              : timeout_ms_;
    GError *error = nullptr;
    if (!rt_store_wait(store_, pointers.data(), pointers.size(), wait_ms, &error))
        fail(error);
}

} // namespace rt_gloo
