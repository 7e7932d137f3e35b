/* mroce-agent: the compliance suite's target adapter for mroce.
 *
 *   mroce-agent [--listen HOST:PORT|unix:PATH] [--port-file FILE]
 *               [--datapath udp|dpdk] [--ip ADDR] [--fault NAME]
 *               [--dpdk-port NAME] [--once] [-v] [-- EAL ARGS...]
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
                    "                   [--dpdk-port NAME] [--once] [-v] "
                    "[-- EAL ARGS]\n"
                    "defaults: --listen 127.0.0.1:7470 --datapath udp --ip "
                    "127.0.0.1\n");
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
