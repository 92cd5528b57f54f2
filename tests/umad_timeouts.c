/* MAD timeouts for OpenSM on the simulated fabric (tests/sshfabric.py preloads this after
 * umad2sim into each test OpenSM).
 *
 * Why: on a real HCA the kernel's MAD layer completes every request that expects a response,
 * with the response or with a timeout after timeout_ms * (retries + 1).  umad2sim (ibsim 0.10)
 * has no such timer: a request nobody answers stays outstanding in OpenSM for ever, and
 * OpenSM's sweep waits for all outstanding SMPs (wait_for_pending_transactions,
 * osm_state_mgr.c).  Two requests are never answered under ibsim:
 *   - the trap 144 a standby of higher priority sends the master after each poll
 *     (osm_sminfo_rcv.c); the master answers with TrapRepress, which ibsim drops
 *     (ibsim/sim_mad.c: "got trap repress - dropping").  After 4 (max_wire_smps) the standby
 *     sends nothing more; as master it would never finish a sweep;
 *   - an SMInfo Get to an OpenSM that has not discovered its own port yet, which it drops
 *     without answering (osm_sminfo_rcv.c); the asking master's sweep then never ends.
 * This library gives umad_send/umad_recv the kernel's behaviour: a request unanswered after its
 * timeout comes back from umad_recv with status ETIMEDOUT, as the kernel returns it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define MAD_SIZE 256
#define SLOTS 1024
#define SLICE_MS 50

/* struct ib_user_mad (linux/ib_user_mad.h): the header fields this library touches */
struct umad_hdr {
	uint32_t agent_id;
	uint32_t status;
	uint32_t timeout_ms;
	uint32_t retries;
	uint32_t length;
};

struct pending {
	int used, fd, agent;
	uint8_t mgmt_class;
	uint32_t tid;		/* low 32 bits: umad2sim and ibsim rewrite the high ones */
	double deadline;
	uint8_t mad[MAD_SIZE];
};

static struct pending table[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int (*real_send)(int, int, void *, int, int, int);
static int (*real_recv)(int, void *, int *, int);
static int (*real_size)(void);

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void resolve(void)
{
	if (!real_send) {
		real_send = dlsym(RTLD_NEXT, "umad_send");
		real_recv = dlsym(RTLD_NEXT, "umad_recv");
		real_size = dlsym(RTLD_NEXT, "umad_size");
	}
}

static uint32_t tid_low(const uint8_t *mad)
{
	return (uint32_t)mad[12] << 24 | mad[13] << 16 | mad[14] << 8 | mad[15];
}

int umad_send(int fd, int agentid, void *umad, int length, int timeout_ms, int retries)
{
	uint8_t *mad;
	int i;

	resolve();
	mad = (uint8_t *)umad + real_size();
	if (timeout_ms > 0) {	/* a request: it expects a response */
		pthread_mutex_lock(&lock);
		for (i = 0; i < SLOTS && table[i].used; i++) ;
		if (i < SLOTS) {
			table[i].used = 1;
			table[i].fd = fd;
			table[i].agent = agentid;
			table[i].mgmt_class = mad[1];
			table[i].tid = tid_low(mad);
			table[i].deadline = now() + timeout_ms * (retries + 1) / 1000.0;
			memcpy(table[i].mad, mad, length < MAD_SIZE ? length : MAD_SIZE);
		}
		pthread_mutex_unlock(&lock);
	}
	return real_send(fd, agentid, umad, length, timeout_ms, retries);
}

/* a request of fd past its deadline, handed back as the kernel would: status ETIMEDOUT */
static int expired(int fd, void *umad, int *length)
{
	struct umad_hdr *h = umad;
	double t = now();
	int i, agent = -1;

	pthread_mutex_lock(&lock);
	for (i = 0; i < SLOTS; i++)
		if (table[i].used && table[i].fd == fd && table[i].deadline <= t) {
			memset(umad, 0, real_size());
			memcpy((uint8_t *)umad + real_size(), table[i].mad, MAD_SIZE);
			h->agent_id = agent = table[i].agent;
			h->status = ETIMEDOUT;
			h->length = real_size() + MAD_SIZE;
			*length = MAD_SIZE;
			table[i].used = 0;
			break;
		}
	pthread_mutex_unlock(&lock);
	return agent;
}

/* what umad_recv returned completes the request it answers (a response, a TrapRepress, or a
 * status umad2sim passed on) */
static void completed(int fd, void *umad)
{
	uint8_t *mad = (uint8_t *)umad + real_size();
	int i, answer = (mad[3] & 0x80) || mad[3] == 0x07 || ((struct umad_hdr *)umad)->status;

	if (!answer)
		return;
	pthread_mutex_lock(&lock);
	for (i = 0; i < SLOTS; i++)
		if (table[i].used && table[i].fd == fd && table[i].mgmt_class == mad[1] && table[i].tid == tid_low(mad)) {
			table[i].used = 0;
			break;
		}
	pthread_mutex_unlock(&lock);
}

int umad_recv(int fd, void *umad, int *length, int timeout_ms)
{
	double until = timeout_ms < 0 ? -1 : now() + timeout_ms / 1000.0;
	int ret, slice, agent;

	resolve();
	for (;;) {
		if ((agent = expired(fd, umad, length)) >= 0)
			return agent;
		slice = SLICE_MS;
		if (until >= 0) {
			double left = until - now();
			if (left <= 0)
				return -ETIMEDOUT;
			if (left * 1000 < slice)
				slice = left * 1000 + 1;
		}
		ret = real_recv(fd, umad, length, slice);
		if (ret == -ETIMEDOUT)
			continue;
		if (ret >= 0)
			completed(fd, umad);
		return ret;
	}
}
