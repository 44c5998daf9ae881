/* Philox 4x32-10 as a function (tests check it against Random123's known answers). */
#include "config.h"

#include "core/graph-internal.h"
#include "core/philox.h"

void rt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    rt_philox_block(ctr[0], ctr[1], ctr[2], ctr[3], key[0], key[1], out);
}
