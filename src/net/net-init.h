/* net-init.h: process-wide setup of libcurl, shared by the network clients. */
#ifndef ROBOTRAIN_NET_NET_INIT_H
#define ROBOTRAIN_NET_NET_INIT_H

/* Calls curl_global_init() once per process (later calls return at once; thread-safe). Call it
 * before the first curl_easy_init(). */
void rt_net_global_init(void);

#endif
