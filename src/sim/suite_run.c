/* The suite's worker processes: every run is one fork()ed child that
 * runs one experiment and writes its record to DIR/runs/ID.json (and
 * its series), then _exit()s. So the peak RSS is one run's, and a run
 * that crashes, is killed or overruns its wall-time budget becomes a
 * record with status "error" instead of ending the suite. At most
 * o->jobs children at a time, and a run waits while the memory the
 * running ones need leaves too little for it (suite_job_mem). */
#define _POSIX_C_SOURCE 200809L /* fork, waitpid, kill, nanosleep */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mroce/mroce.h>

#include "sim/event.h"
#include "sim/suite_int.h"

#define SUITE_MAX_JOBS 64
#define POLL_NS 20000000L /* 20 ms */

struct slot {
    pid_t pid;
    int job;
    double t0;
    bool timed_out;
    uint64_t mem; /* job_mem of the run */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void say(const char *line, int n)
{
    if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0)
        return;
}

static void run_path(const struct suite_job *j, const char *ext, char *buf,
                     size_t n)
{
    char name[160];
    suite_run_name(j, ext, name, sizeof(name));
    snprintf(buf, n, "%s/runs/%s", j->o->out, name);
}

/* ---- The child ---- */

static struct suite_job child_job; /* the child's own copy */

static void child_progress(void *ud, const struct mroce_sim_exp_progress *p)
{
    const struct suite_job *j = ud;
    char line[256];
    int n = snprintf(line, sizeof(line),
                     "suite: [%d/%d] %s %s: %.1f us simulated, %.2f M "
                     "events, %.2f M events/s\n",
                     j->idx + 1, j->n, j->s->id, j->t->id,
                     (double)p->now_ps / MROCE_SIM_PS_PER_US,
                     (double)p->events / 1e6,
                     p->wall_s > 0 ? (double)p->events / p->wall_s / 1e6 : 0);
    say(line, n);
}

/* Writes the record under a temporary name and renames it, so the
 * parent sees a whole file or none. */
static int child_write(const struct suite_job *j, const struct sj *rec)
{
    char tmp[1024], path[1024];
    run_path(j, ".json.tmp", tmp, sizeof(tmp));
    run_path(j, ".json", path, sizeof(path));
    if (sj_write_file(tmp, rec))
        return -1;
    return rename(tmp, path);
}

static void child_main(const struct suite_job *j)
{
    child_job = *j;
    struct mroce_sim_exp_cfg c;
    suite_cfg(&child_job, &c);
    if (!j->o->quiet) {
        c.progress = child_progress;
        c.progress_ud = &child_job;
        c.progress_every_s = 2.0;
    }
    struct sj *rec = suite_rec_new(&child_job);
    struct mroce_sim_exp_result r;
    int err = mroce_sim_exp_run(&c, &r);
    if (err) {
        suite_rec_status(rec, "error",
                         r.error[0] ? r.error : mroce_strerror(err));
    } else {
        suite_rec_result(rec, &r);
        suite_rec_series(&child_job, &r);
    }
    /* no cleanup: _exit returns the memory at once */
    _exit(rec && child_write(&child_job, rec) == 0 ? 0 : 3);
}

/* ---- The parent ---- */

static void parent_error(const struct suite_job *j, const char *why)
{
    char path[1024];
    struct sj *rec = suite_rec_new(j);
    if (!rec)
        return;
    suite_rec_status(rec, "error", why);
    run_path(j, ".json", path, sizeof(path));
    sj_write_file(path, rec);
    sj_free(rec);
}

static void why_exit(int st, const struct slot *s, double timeout, char *buf,
                     size_t n)
{
    if (s->timed_out)
        snprintf(buf, n, "killed after %.0f s of wall time (--timeout)",
                 timeout);
    else if (WIFSIGNALED(st))
        snprintf(buf, n, "worker killed by signal %d (%s)", WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
    else if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
        snprintf(buf, n, "worker exited with status %d", WEXITSTATUS(st));
    else
        snprintf(buf, n, "worker wrote no result");
}

static void report_done(const struct suite_job *j, double wall)
{
    char path[1024], err[128], line[400];
    run_path(j, ".json", path, sizeof(path));
    struct sj *rec = sj_parse_file(path, err, sizeof(err));
    const char *st = sj_str(rec, "status"), *why = sj_str(rec, "why");
    int n = snprintf(line, sizeof(line), "suite: [%d/%d] %s %s: %s", j->idx + 1,
                     j->n, j->s->id, j->t->id, st ? st : "unreadable");
    if (st && strcmp(st, "ok") && why)
        n += snprintf(line + n, sizeof(line) - (size_t)n, " (%s)", why);
    if (sj_has_num(rec, "busbw_gbps"))
        n += snprintf(line + n, sizeof(line) - (size_t)n, ", busbw %.2f Gb/s",
                      sj_num(rec, "busbw_gbps", 0));
    if (sj_has_num(rec, "jct_us"))
        n += snprintf(line + n, sizeof(line) - (size_t)n, ", JCT %.3f us",
                      sj_num(rec, "jct_us", 0));
    n += snprintf(line + n, sizeof(line) - (size_t)n,
                  ", %.2f M events/s, %.0f MB, %.1f s\n",
                  sj_num(rec, "events_per_s", 0) / 1e6,
                  sj_num(rec, "peak_rss_mb", 0), wall);
    say(line, n < (int)sizeof(line) ? n : (int)sizeof(line) - 1);
    sj_free(rec);
}

static void finish(const struct suite_opts *o, const struct suite_job *j,
                   const struct slot *s, int st)
{
    char path[1024], why[160];
    run_path(j, ".json", path, sizeof(path));
    bool clean = !s->timed_out && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!clean || access(path, R_OK) != 0) {
        why_exit(st, s, o->timeout_s, why, sizeof(why));
        parent_error(j, why);
    }
    if (!o->quiet)
        report_done(j, now_s() - s->t0);
}

static int start(struct suite_job *j, struct slot *s)
{
    char path[1024];
    run_path(j, ".json", path, sizeof(path));
    unlink(path);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        parent_error(j, strerror(errno));
        return -1;
    }
    if (pid == 0)
        child_main(j);
    *s = (struct slot){.pid = pid, .job = j->idx, .t0 = now_s()};
    return 0;
}

static void check_timeouts(const struct suite_opts *o, struct slot *slots,
                           int n)
{
    double now = now_s();
    for (int i = 0; i < n; i++)
        if (slots[i].pid > 0 && !slots[i].timed_out && o->timeout_s > 0 &&
            now - slots[i].t0 > o->timeout_s) {
            slots[i].timed_out = true;
            kill(slots[i].pid, SIGKILL);
        }
}

/* ---- Memory: runs in parallel must fit together ---- */

/* What a run needs, from above: its buffers when they are real (up to
 * the payload-free threshold, exp.h: beyond it a run keeps labels, 0.2%
 * of the bytes), ~1 GiB for the fabric, engines and packets of a 64-host
 * run and ~400 KiB more per host (an 8,192-host permutation peaks at
 * ~4 GiB, docs/suite.md). */
uint64_t suite_job_mem(const struct suite_job *j)
{
    uint64_t hosts = (uint64_t)j->o->def->hosts;
    uint64_t bufs = 3ull * hosts * j->s->size;
    if (bufs > MROCE_SIM_EXP_PAYLOAD_AUTO_BYTES)
        bufs = bufs / 256;
    return bufs + (1ull << 30) + hosts * (400ull << 10);
}

/* 90% of MemAvailable when the suite starts; 0 (no gate) if unknown. */
static uint64_t mem_budget(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb * 1024ull / 10 * 9;
}

/* A run that alone needs more than the budget still runs, alone. */
bool suite_mem_fits(uint64_t used, uint64_t need, uint64_t budget)
{
    return !budget || !used || used + need <= budget;
}

static bool mem_fits(const struct slot *slots, int n, uint64_t need,
                     uint64_t budget)
{
    uint64_t used = 0;
    for (int i = 0; i < n; i++)
        used += slots[i].pid > 0 ? slots[i].mem : 0;
    return suite_mem_fits(used, need, budget);
}

/* Reaps one child if one ended; returns its slot or -1. */
static int reap(struct slot *slots, int n, int *st)
{
    pid_t pid = waitpid(-1, st, WNOHANG);
    for (int i = 0; pid > 0 && i < n; i++)
        if (slots[i].pid == pid)
            return i;
    return -1;
}

int suite_run_all(const struct suite_opts *o, struct suite_job *jobs, int n)
{
    struct slot slots[SUITE_MAX_JOBS] = {{0}};
    int width = o->jobs < 1                ? 1
                : o->jobs > SUITE_MAX_JOBS ? SUITE_MAX_JOBS
                                           : o->jobs;
    int next = 0, running = 0, done = 0;
    uint64_t budget = mem_budget();
    while (done < n) {
        for (int i = 0; i < width && next < n; i++)
            if (slots[i].pid <= 0 &&
                mem_fits(slots, width, suite_job_mem(&jobs[next]), budget)) {
                if (start(&jobs[next], &slots[i]) == 0) {
                    slots[i].mem = suite_job_mem(&jobs[next]);
                    running++;
                } else
                    done++;
                next++;
            }
        int st, i = running ? reap(slots, width, &st) : -1;
        if (i >= 0) {
            finish(o, &jobs[slots[i].job], &slots[i], st);
            slots[i].pid = 0;
            running--;
            done++;
            continue;
        }
        check_timeouts(o, slots, width);
        nanosleep(&(struct timespec){0, POLL_NS}, NULL);
    }
    return 0;
}
