/* plugins/comm-gloo/gloo-store.h: Gloo's rendezvous store interface over robotrain's store
 * client, so that Gloo's full-mesh bootstrap exchanges its socket addresses through the run's
 * rendezvous store. Keys get a prefix that is unique to one communicator. Every call has a
 * deadline; a failure throws rt_gloo::StoreError carrying the store client's message. */
#ifndef RT_GLOO_STORE_H
#define RT_GLOO_STORE_H

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include <robotrain/store.h>

namespace rt_gloo {

/* What a store call failed with: the GError message of robotrain's client. */
struct StoreError : public std::runtime_error {
    explicit StoreError(const std::string &message) : std::runtime_error(message) {}
};

class Store : public gloo::rendezvous::Store {
  public:
    /* store stays owned by the caller and must outlive this object. timeout_ms bounds get()
     * and the wait() that has no timeout of its own. */
    Store(rt_store *store, std::string prefix, unsigned timeout_ms);

    void set(const std::string &key, const std::vector<char> &data) override;
    std::vector<char> get(const std::string &key) override;
    void wait(const std::vector<std::string> &keys) override;
    void wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &timeout) override;

  private:
    rt_store *store_;
    std::string prefix_;
    unsigned timeout_ms_;
};

} // namespace rt_gloo

#endif
