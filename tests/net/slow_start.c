/* LD_PRELOAD helper of tests/net/secure_transfers.sh: rte_eth_dev_start
 * waits MROCE_SLOW_START_MS (default 1000) before it starts the port,
 * as a server does on a loaded machine between creating its memif socket
 * (at EAL start-up) and starting the port. A memif server refuses a
 * client that connects in between, and the client never retries. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

int rte_eth_dev_start(uint16_t port);

int rte_eth_dev_start(uint16_t port)
{
    int (*real)(uint16_t) =
        (int (*)(uint16_t))dlsym(RTLD_NEXT, "rte_eth_dev_start");
    const char *ms = getenv("MROCE_SLOW_START_MS");
    long n = ms ? atol(ms) : 1000;
    struct timespec t = {n / 1000, (n % 1000) * 1000000L};
    nanosleep(&t, NULL);
    return real ? real(port) : -1;
}
