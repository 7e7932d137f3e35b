/* Two test processes (a parent and its forked child, e.g. each with its
 * own datapath) talking over a socketpair: whole-buffer transfers, a
 * barrier, and a non-blocking "has the other written?". They return
 * errors instead of asserting, so that a child without cmocka can use
 * them. */
#ifndef MROCE_TESTS_SUPPORT_XPROC_H
#define MROCE_TESTS_SUPPORT_XPROC_H

#include <stdbool.h>
#include <stddef.h>

/* Writes (out) or reads all n bytes of buf on fd; 0, or -1 on error or
 * end of file. */
int xproc_io(int fd, void *buf, size_t n, bool out);
/* Both processes reach this point before either goes on: each sends tag
 * and expects the same back; 0, or -1. */
int xproc_barrier(int fd, char tag);
/* True if the other process has written something not yet read. */
bool xproc_ready(int fd);

#endif
