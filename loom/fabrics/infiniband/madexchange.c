/* madquery's exchange loop (loom/fabrics/infiniband/madquery.py, `Port.exchange`) in C: send
 * every request, `window` in flight, match answers to requests by transaction ID, send a request
 * again under a new ID when its deadline passes (up to `tries` sends), and copy each answer's
 * data out.  The loop runs once per MAD: under the simulator a two-zone read-back is 210,808
 * SMPs, where Python's loop spends ~15 µs of CPU on each beside ibsim's ~6 (bench/push.py
 * shows both, and a bare C reader's floor).  Python keeps everything else: the requests are
 * built, and the answers decoded, by madquery; this file only moves bytes.
 *
 * Built by `loom.fabrics.infiniband.compiled` (cc -O2 -shared) into Loom's cache directory and
 * loaded by madquery through ctypes when LOOM_MADEXCHANGE names it; without it (no compiler,
 * or the SSH target, which runs madquery's text alone with the master's python3) madquery runs
 * its own loop, which does the same.  Declared here, not included: the machine has
 * libibumad.so.3 but not always its headers (libibumad-dev).
 * Layouts: IBA 1.3 13.4.2 (MAD header: status at 4, TID at 8, modifier at 20, data at 64);
 * struct ib_user_mad (agent_id, status, ...), whose size umad_size() gives. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* libibumad's umad_send and umad_recv, passed in: madquery hands libibumad's own (the loop
 * calls them directly), its tests a stand-in that drops and reorders answers */
typedef int (*send_fn)(int fd, int agentid, void *umad, int length, int timeout_ms, int retries);
typedef int (*recv_fn)(int fd, void *umad, int *length, int timeout_ms);

enum { MAD = 256, DATA_AT = 64 };

/* what became of request i (result[i]) */
enum { ANSWERED = 0, UNANSWERED = -1 };  /* > 0: the MAD status of an error answer */

/* the exchange's own failures (its return value; the request's index in *failed_at) */
enum { DONE = 0, SEND_FAILED = -1, RECV_FAILED = -2, NO_MEMORY = -3, STOPPED = -4 };

typedef int (*progress_fn)(int finished);  /* non-zero: stop (the caller was interrupted) */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]; }
static void put32(uint8_t *p, uint32_t v) { p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = v; }

struct state {
    send_fn send;
    int fd, n, timeout_ms, tries;
    size_t head, size;                       /* umad header bytes; a packet's (header + MAD) */
    const int32_t *agent, *packet_of, *data_len;
    const uint8_t *packets;
    const uint32_t *mod;
    const int64_t *data_at;
    uint8_t *data, *sbuf;
    int32_t *result;
    uint32_t tid0;                           /* the first send's TID; send s has tid0 + s */
    int32_t *request_of;                     /* send → its request */
    double *deadline;                        /* send → when it is given up on */
    int32_t *last_send, *tries_of;           /* request → its newest send, how many sends */
    int sends, oldest, pending, finished, failed_at, err;
};

/* send request i again (or for the first time) under a new TID */
static int send_one(struct state *s, int i) {
    int k = s->sends++;
    memcpy(s->sbuf, s->packets + (size_t)s->packet_of[i] * s->size, s->size);
    put32(s->sbuf + s->head + 12, s->tid0 + (uint32_t)k);
    put32(s->sbuf + s->head + 20, s->mod[i]);
    if (s->send(s->fd, s->agent[i], s->sbuf, MAD, s->timeout_ms, 0) < 0) {
        s->failed_at = i, s->err = errno;
        return SEND_FAILED;
    }
    s->request_of[k] = i, s->deadline[k] = now() + s->timeout_ms / 1000.0;
    s->last_send[i] = k, s->tries_of[i]++, s->pending++;
    return DONE;
}

/* a send is waited for while it is its request's newest and the request has no result yet */
static int waited(const struct state *s, int k) {
    int i = s->request_of[k];
    return s->last_send[i] == k && s->result[i] == INT32_MIN;
}

/* request i's newest send came back unanswered (or not at all): again, or give it up */
static int settle(struct state *s, int i) {
    s->pending--;
    if (s->tries_of[i] < s->tries)
        return send_one(s, i);
    s->result[i] = UNANSWERED, s->finished++;
    return DONE;
}

/* the oldest waited-for send, if its deadline passed: 1 when it was settled */
static int expire(struct state *s, int *rc) {
    while (s->oldest < s->sends && !waited(s, s->oldest))
        s->oldest++;
    if (s->oldest == s->sends || s->deadline[s->oldest] > now())
        return 0;
    int i = s->request_of[s->oldest];
    s->last_send[i] = -1;  /* its answer, if it comes yet, is no longer waited for */
    *rc = settle(s, i);
    return 1;
}

/* Exchange n requests on the open umad port fd (through `send` and `recv`: libibumad's).  Request i sends packet packet_of[i] (packets:
 * each `size` bytes, umad header then MAD, as madquery builds them) through agent[i] with
 * attribute modifier mod[i]; its answer's first data_len[i] bytes go to data + data_at[i].
 * result[i]: ANSWERED, UNANSWERED after `tries` sends, or the MAD status (> 0, without a
 * directed route's D bit) of an error answer.  nap_us > 0: an empty receive queue is napped on
 * (the simulator, see madquery.SIM_NAP); 0: waited on until the oldest deadline.  `done` hears
 * how many are finished every `every` answers (when the oldest deadline is looked at too) and
 * at the end; when it returns non-zero the exchange stops (STOPPED).  Returns DONE, or
 * SEND_FAILED / RECV_FAILED with errno in *err (and the request in *failed_at), NO_MEMORY, or
 * STOPPED. */
int loom_exchange(send_fn send, recv_fn recv, int fd, int n, const int32_t *agent, const uint8_t *packets, size_t head,
                  const int32_t *packet_of, const uint32_t *mod, const int32_t *data_len, const int64_t *data_at,
                  int window, int timeout_ms, int tries, int nap_us, int every, uint32_t tid0,
                  uint8_t *data, int32_t *result, progress_fn done, int *failed_at, int *err) {
    struct state s = {.send = send, .fd = fd, .n = n, .timeout_ms = timeout_ms, .tries = tries, .head = head, .size = head + MAD,
                      .agent = agent, .packet_of = packet_of, .data_len = data_len, .packets = packets, .mod = mod,
                      .data_at = data_at, .data = data, .result = result, .tid0 = tid0};
    size_t most = (size_t)n * (size_t)(tries > 0 ? tries : 1) + 1;
    s.sbuf = calloc(1, s.size);
    uint8_t *rbuf = calloc(1, s.size);
    s.request_of = malloc(most * sizeof *s.request_of), s.deadline = malloc(most * sizeof *s.deadline);
    s.last_send = malloc(((size_t)n + 1) * sizeof *s.last_send), s.tries_of = calloc((size_t)n + 1, sizeof *s.tries_of);
    int rc = DONE, sent = 0;
    if (!s.sbuf || !rbuf || !s.request_of || !s.deadline || !s.last_send || !s.tries_of)
        rc = NO_MEMORY;
    for (int i = 0; rc == DONE && i < n; i++)
        result[i] = INT32_MIN, s.last_send[i] = -1;
    struct timespec nap = {nap_us / 1000000, (long)(nap_us % 1000000) * 1000};
    while (rc == DONE && (sent < n || s.pending)) {
        while (rc == DONE && sent < n && s.pending < window)
            rc = send_one(&s, sent++);
        if (rc != DONE)
            break;
        int length = MAD, wait_ms = 0;
        if (!nap_us) {
            while (s.oldest < s.sends && !waited(&s, s.oldest))
                s.oldest++;
            double left = s.oldest < s.sends ? s.deadline[s.oldest] - now() : 0;
            wait_ms = left > 0 ? (int)(left * 1000) + 1 : 1;
        }
        int got = recv(fd, rbuf, &length, wait_ms);
        if (got < 0) {
            if (-got != ETIMEDOUT && -got != EWOULDBLOCK) {
                rc = RECV_FAILED, s.err = -got;
                break;
            }
            if (!expire(&s, &rc) && nap_us)
                nanosleep(&nap, NULL);
            continue;
        }
        const uint8_t *m = rbuf + head;
        uint32_t k = get32(m + 12) - tid0;  /* the low half of the TID: the kernel writes the high one */
        if (k >= (uint32_t)s.sends || !waited(&s, (int)k))
            continue;  /* an answer to a send given up on, or not ours */
        int i = s.request_of[k];
        uint32_t umad_status;  /* struct ib_user_mad's status, in host order */
        memcpy(&umad_status, rbuf + 4, sizeof umad_status);
        if (umad_status) {  /* the kernel (or the simulator) gave the request back unanswered */
            s.last_send[i] = -1;
            rc = settle(&s, i);
            continue;
        }
        unsigned status = (m[4] << 8 | m[5]) & 0x7FFF;
        s.pending--, s.finished++;
        if (status)
            result[i] = (int32_t)status;
        else {
            memcpy(data + data_at[i], m + DATA_AT, (size_t)data_len[i]);
            result[i] = ANSWERED;
        }
        if (every > 0 && s.finished % every == 0) {
            if (done && done(s.finished))
                rc = STOPPED;
            else if (s.pending)
                expire(&s, &rc);
        }
    }
    if (rc == DONE && done && done(s.finished))
        rc = STOPPED;
    *failed_at = s.failed_at, *err = s.err;
    free(s.sbuf), free(rbuf), free(s.request_of), free(s.deadline), free(s.last_send), free(s.tries_of);
    return rc;
}
