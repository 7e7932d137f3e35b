/* mroce-conform: the MetaRoCE compliance suite. The suite is the peer: it
 * owns a UDP socket, plays the remote endpoint byte by byte and checks
 * every byte the implementation under test sends, driving that
 * implementation through an agent (docs/conformance.md).
 *
 *   mroce-conform [--target HOST:PORT] [--json FILE] [--junit FILE]
 *                 [--md FILE] [--filter GLOB] [--list] [-v]
 *   mroce-conform --mutants [--mutants-json FILE]
 *
 * Without --target it starts mroce's own UDP agent on loopback. Exit
 * status 0 when no MUST test failed, 1 otherwise, 2 on a usage or set-up
 * error. The work is in src/conform. */
#include "conform/cf.h"

int main(int argc, char **argv)
{
    return cf_main(argc, argv);
}
