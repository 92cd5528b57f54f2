/* The floor under Loom's MAD reader: the same directed-route SMP Gets, WINDOW in flight, matched
 * by transaction ID, in C with nothing else — no Python, no decoding, no JSON.  bench/push.py
 * runs it under the simulator (LD_PRELOAD=umad2sim) on the QoS read-back's own SMPs, beside
 * Loom's reader (loom/fabrics/infiniband/madquery.py): what is left between the two is Loom's;
 * what the bare reader cannot beat is ibsim's and the shim's.
 *
 * stdin: one SMP per line, "PATH ATTR MOD" (PATH as `smpquery -D` takes it, "0,1,3"; ATTR and
 * MOD in decimal).  argv[1]: SMPs in flight.  stdout: "SENT ANSWERED ERRORS SECONDS".
 * An empty receive queue is napped on for 0.1 ms, as Loom's reader does under the simulator.
 * No resend: an SMP without an answer stops the count (the bench then reports it unanswered).
 * Layouts: IBA 1.3 13.4.2 (MAD), 14.2.1.2 (directed-route SMP); struct ib_user_mad (umad.h),
 * whose header size umad_size() gives.  Declared here: the machine has libibumad.so.3 but not
 * its headers (libibumad-dev). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int umad_init(void);
int umad_open_port(const char *ca_name, int portnum);
int umad_register(int fd, int mgmt_class, int mgmt_version, uint8_t rmpp_version, long method_mask[]);
size_t umad_size(void);
int umad_set_addr(void *umad, int dlid, int dqp, int sl, int qkey);
int umad_set_pkey(void *umad, int pkey_index);
int umad_send(int fd, int agentid, void *umad, int length, int timeout_ms, int retries);
int umad_recv(int fd, void *umad, int *length, int timeout_ms);

enum { MAD = 256, DR_CLASS = 0x81, PERMISSIVE = 0xFFFF, MAX_SMPS = 1 << 22 };

struct smp { uint8_t hops[64]; int nhops; uint16_t attr; uint32_t mod; };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v); }

/* a Get of s's attribute along its route, transaction ID tid (IBA 14.2.1.2) */
static void build(uint8_t *mad, const struct smp *s, uint32_t tid) {
    memset(mad, 0, MAD);
    mad[0] = 1, mad[1] = DR_CLASS, mad[2] = 1, mad[3] = 1;  /* base version, class, class version, Get */
    mad[7] = s->nhops - 1;                                   /* hop count (hop pointer 0) */
    put32(mad + 12, tid);                                    /* the TID's low half */
    put16(mad + 16, s->attr);
    put32(mad + 20, s->mod);
    put16(mad + 32, PERMISSIVE), put16(mad + 34, PERMISSIVE);  /* DrSLID, DrDLID */
    memcpy(mad + 128, s->hops, s->nhops);                     /* initial path */
}

static int parse(char *line, struct smp *s) {
    char *path = strtok(line, " \n"), *attr = strtok(NULL, " \n"), *mod = strtok(NULL, " \n");
    if (!path || !attr || !mod)
        return -1;
    s->nhops = 0;
    for (char *h = strtok(path, ","); h; h = strtok(NULL, ","))
        if (s->nhops == 64)
            return -1;  /* a directed route has at most 64 hops */
        else
            s->hops[s->nhops++] = (uint8_t)atoi(h);
    s->attr = (uint16_t)atoi(attr), s->mod = (uint32_t)strtoul(mod, NULL, 10);
    return s->nhops ? 0 : -1;
}

int main(int argc, char **argv) {
    int window = argc > 1 ? atoi(argv[1]) : 64, n = 0;
    struct smp *smps = calloc(MAX_SMPS, sizeof *smps);
    char line[1024];
    while (n < MAX_SMPS && fgets(line, sizeof line, stdin)) {
        if (!strchr(line, '\n') || parse(line, &smps[n]) != 0) {
            fprintf(stderr, "line %d: not \"PATH ATTR MOD\" (at most 64 hops)\n", n + 1);
            return 1;
        }
        n++;
    }
    int fd = umad_init() == 0 ? umad_open_port(NULL, 0) : -1;
    int agent = fd < 0 ? -1 : umad_register(fd, DR_CLASS, 1, 0, NULL);
    if (agent < 0) {
        fprintf(stderr, "cannot open the local IB port (is the simulator up?)\n");
        return 1;
    }
    size_t head = umad_size();
    uint8_t *sbuf = calloc(1, head + MAD), *rbuf = calloc(1, head + MAD);
    umad_set_addr(sbuf, PERMISSIVE, 0, 0, 0);
    umad_set_pkey(sbuf, 0);
    uint32_t base = (uint32_t)rand() << 8;
    char *answered = calloc(n, 1);
    int sent = 0, got = 0, errors = 0, pending = 0;
    struct timespec nap = {0, 100000};
    double t0 = now(), deadline = t0 + 60;
    while ((sent < n || pending) && now() < deadline) {
        while (sent < n && pending < window) {
            build(sbuf + head, &smps[sent], base + sent);
            if (umad_send(fd, agent, sbuf, MAD, 2000, 0) < 0) {
                fprintf(stderr, "umad_send failed\n");
                return 1;
            }
            sent++, pending++;
        }
        int len = MAD;
        if (umad_recv(fd, rbuf, &len, 0) < 0) {
            nanosleep(&nap, NULL);
            continue;
        }
        const uint8_t *mad = rbuf + head;
        uint32_t i = ((uint32_t)mad[12] << 24 | mad[13] << 16 | mad[14] << 8 | mad[15]) - base;
        if (i >= (uint32_t)sent || answered[i])
            continue;  /* not ours */
        answered[i] = 1, pending--;
        if (((uint32_t *)rbuf)[1] || ((mad[4] << 8 | mad[5]) & 0x7FFF))  /* umad status, MAD status */
            errors++;
        else
            got++;
    }
    printf("%d %d %d %.6f\n", sent, got, errors, now() - t0);
    return got + errors == n ? 0 : 2;
}
