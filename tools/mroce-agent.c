/* mroce-agent: the compliance suite's target adapter for mroce.
 *
 *   mroce-agent [--listen HOST:PORT|unix:PATH] [--port-file FILE]
 *               [--datapath udp|dpdk] [--ip ADDR] [--fault NAME]
 *               [--dpdk-port NAME] [--neigh IP=MAC]... [--once] [-v]
 *               [-- EAL ARGS...]
 *
 * Serves the control protocol of docs/conformance.md: mroce-conform (or
 * any driver) opens contexts and connections on this host's engine and
 * drives them. The work is in src/agent. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"

static void usage(void)
{
    fprintf(stderr, "usage: mroce-agent [--listen HOST:PORT|unix:PATH] "
                    "[--port-file FILE]\n"
                    "                   [--datapath udp|dpdk] [--ip ADDR] "
                    "[--fault NAME]\n"
                    "                   [--dpdk-port NAME] [--neigh IP=MAC]... "
                    "[--once] [-v]\n"
                    "                   [-- EAL ARGS]\n"
                    "defaults: --listen 127.0.0.1:7470 --datapath udp --ip "
                    "127.0.0.1\n");
}

/* "IP=aa:bb:cc:dd:ee:ff": a static neighbour of the DPDK datapath, so
 * that its first answer to a peer does not wait for ARP. */
static int parse_neigh(const char *v, struct mroce_dp_neigh *n)
{
    char ip[64];
    unsigned m[6];
    const char *eq = strchr(v, '=');
    if (!eq || (size_t)(eq - v) >= sizeof(ip))
        return -1;
    snprintf(ip, sizeof(ip), "%.*s", (int)(eq - v), v);
    if (mroce_addr_parse(ip, &n->ip) ||
        sscanf(eq + 1, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4],
               &m[5]) != 6)
        return -1;
    for (int i = 0; i < 6; i++)
        n->mac[i] = (uint8_t)m[i];
    return 0;
}

static int parse(int argc, char **argv, struct agent_opts *o)
{
    *o = (struct agent_opts){
        .listen = "127.0.0.1:7470", .dp_kind = MROCE_DP_UDP, .ip = "127.0.0.1"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--")) {
            o->eal_argc = argc - i; /* argv[i] stands for argv[0] */
            o->eal_argv = argv + i;
            break;
        }
        if (!strcmp(a, "--once") || !strcmp(a, "-v")) {
            *(a[1] == 'v' ? &o->verbose : &o->once) = true;
            continue;
        }
        if (!v)
            return -1;
        if (!strcmp(a, "--listen"))
            o->listen = v;
        else if (!strcmp(a, "--port-file"))
            o->port_file = v;
        else if (!strcmp(a, "--ip"))
            o->ip = v;
        else if (!strcmp(a, "--fault"))
            o->fault = v;
        else if (!strcmp(a, "--dpdk-port"))
            o->dpdk_port = v;
        else if (!strcmp(a, "--neigh") && o->n_neigh < 8 &&
                 !parse_neigh(v, &o->neigh[o->n_neigh]))
            o->n_neigh++;
        else if (!strcmp(a, "--datapath") && !strcmp(v, "udp"))
            o->dp_kind = MROCE_DP_UDP;
        else if (!strcmp(a, "--datapath") && !strcmp(v, "dpdk"))
            o->dp_kind = MROCE_DP_DPDK;
        else
            return -1;
        i++;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct agent_opts o;
    if (parse(argc, argv, &o) < 0) {
        usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    return agent_run(&o);
}
