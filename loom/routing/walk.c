/*
 * The passes that touch every [switch × LID] cell of a subnet: where each packet ends and what
 * the channel adapters' traffic passes (`loom.checks.paths.Walk`: `outcome`, `traffic`), the
 * deadlock check's channel dependencies, and which switches the traffic to each destination
 * reaches (`loom.routing.loads.carried`, which the engine counts on between its passes).
 *
 * Why C: at the unicast LID limit a subnet has ~150 million cells, and numpy moves every packet
 * one step at a time over whole blocks (a gather per step, most of them for packets already
 * delivered): ~12 s of CPU for `outcome` and ~6 s for `traffic`, most of `loom check`'s time
 * there.  Here each cell is resolved once, a block of LIDs at a time turned into columns that
 * fit in cache.  Why optional: without a C compiler (or with Loom's cache off) `paths.py` runs
 * its numpy passes, which compute the same arrays (tests/test_paths.py compares them).
 *
 * Built by `loom.native` (cc -O2 -shared) into Loom's cache directory and called through
 * ctypes (`loom.routing.kernels`), which lets go of the GIL: two halves of the LIDs run in two
 * threads.
 * Arrays are C-ordered [switch, LID] as numpy holds them; nothing here allocates what it returns.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEAD_LOOP (-3) /* paths.LOOP: still travelling after every switch was visited */
#define BLOCK 64       /* LIDs turned into columns at a time: 64 × switches × 5-6 bytes in cache */
#define UNSEEN (-1)
#define ON_PATH (-2)

/* The block lids[d0 .. d0 + w) of C-ordered [switch, LID] arrays turned into columns:
 * out[j * n + s] = in[s, lids[d0 + j]], for each array given (NULL: not wanted). */
static void load_block(int64_t n, int64_t width, const int64_t *lids, int64_t d0, int64_t w, const int16_t *nxt,
                       int16_t *step, const int16_t *hops, int16_t *h, const uint8_t *lft, uint8_t *port)
{
    for (int64_t s = 0; s < n; s++)
        for (int64_t j = 0; j < w; j++) {
            int64_t cell = s * width + lids[d0 + j];
            if (step)
                step[j * n + s] = nxt[cell];
            if (h)
                h[j * n + s] = hops[cell];
            if (port)
                port[j * n + s] = lft[cell];
        }
}

/* end/hops of columns lids[lo..hi) of nxt (paths.Walk.next_switch: the next switch, or
 * DELIVERED/DEAD < 0).  A packet is followed until it meets a cell already resolved (its end and
 * hops are then known), a stop, or itself (a loop: every cell of the chain ends LOOP, hops 0).
 * Returns 0, or -1 when out of memory. */
int loom_follow(const int16_t *nxt, int64_t n, int64_t width, const int64_t *lids, int64_t lo, int64_t hi,
                int8_t *end, int16_t *hops)
{
    int16_t *col = malloc(sizeof(int16_t) * BLOCK * n), *h = malloc(sizeof(int16_t) * BLOCK * n);
    int8_t *e = malloc(BLOCK * n);
    int64_t *chain = malloc(sizeof(int64_t) * (n + 1));
    if (!col || !h || !e || !chain) {
        free(col), free(h), free(e), free(chain);
        return -1;
    }
    for (int64_t d0 = lo; d0 < hi; d0 += BLOCK) {
        int64_t w = hi - d0 < BLOCK ? hi - d0 : BLOCK;
        load_block(n, width, lids, d0, w, nxt, col, NULL, NULL, NULL, NULL);
        for (int64_t j = 0; j < w; j++) {
            const int16_t *c = col + j * n;
            int16_t *hj = h + j * n;
            int8_t *ej = e + j * n;
            for (int64_t s = 0; s < n; s++)
                hj[s] = UNSEEN;
            for (int64_t s = 0; s < n; s++) {
                int64_t depth = 0, x = s;
                int end_at = 0, hops_at = 0;
                while (1) {
                    if (hj[x] >= 0) {
                        end_at = ej[x], hops_at = hj[x];
                        break;
                    }
                    if (hj[x] == ON_PATH) {
                        end_at = DEAD_LOOP;
                        break;
                    }
                    if (c[x] < 0) {
                        ej[x] = (int8_t)c[x], hj[x] = 0;
                        end_at = c[x];
                        break;
                    }
                    hj[x] = ON_PATH;
                    chain[depth++] = x;
                    x = c[x];
                }
                for (int64_t i = depth - 1; i >= 0; i--) {
                    int64_t y = chain[i];
                    if (end_at == DEAD_LOOP) {
                        ej[y] = DEAD_LOOP, hj[y] = 0;
                    } else {
                        ej[y] = (int8_t)end_at, hj[y] = (int16_t)++hops_at;
                    }
                }
            }
        }
        for (int64_t s = 0; s < n; s++)
            for (int64_t j = 0; j < w; j++) {
                end[s * width + lids[d0 + j]] = e[j * n + s];
                hops[s * width + lids[d0 + j]] = h[j * n + s];
            }
    }
    free(col), free(h), free(e), free(chain);
    return 0;
}

/* paths.Walk.traffic for destinations lids[lo..hi) of loop-free tables: reached[s, j] (C-ordered
 * [switch, len(lids)]) whether traffic from some CA to lids[j] passes switch s, and paths[s * 256 + port] += the CA sources whose packets to a CA LID leave s
 * by that port.  Each switch passes on what reached it to the next, farthest from the
 * destination first (by `hops`), so a cell is complete before it is passed on.
 * `cas[s]` CAs on each switch; `ca_switch[lid]` the switch of a CA LID, -1 for other LIDs.
 * Returns 0, or -1 when out of memory. */
int loom_passed_on(const int16_t *nxt, const int16_t *hops, const uint8_t *lft, int64_t n, int64_t width,
                   const int64_t *lids, int64_t lo, int64_t hi, const int64_t *cas, const int64_t *ca_switch,
                   int64_t count, uint8_t *reached, double *paths)
{
    double *flow = malloc(sizeof(double) * n);
    uint8_t *reach = malloc(BLOCK * n), *port = malloc(BLOCK * n);
    int16_t *step = malloc(sizeof(int16_t) * BLOCK * n), *h = malloc(sizeof(int16_t) * BLOCK * n);
    if (!flow || !reach || !port || !step || !h) {
        free(flow), free(reach), free(port), free(step), free(h);
        return -1;
    }
    for (int64_t d0 = lo; d0 < hi; d0 += BLOCK) {
        int64_t w = hi - d0 < BLOCK ? hi - d0 : BLOCK;
        load_block(n, width, lids, d0, w, nxt, step, hops, h, lft, port);
        for (int64_t j = 0; j < w; j++) {
            int64_t own = ca_switch[lids[d0 + j]], top = 0;
            const int16_t *sj = step + j * n, *hj = h + j * n;
            uint8_t *rj = reach + j * n;
            for (int64_t s = 0; s < n; s++) {
                flow[s] = (double)(cas[s] - (s == own));
                rj[s] = cas[s] > 0;
                if (hj[s] > top)
                    top = hj[s];
            }
            for (int64_t k = top; k > 0; k--)
                for (int64_t s = 0; s < n; s++)
                    if (hj[s] == k && rj[s]) {
                        rj[sj[s]] = 1;
                        flow[sj[s]] += flow[s];
                    }
            if (own >= 0) {
                const uint8_t *pj = port + j * n;
                for (int64_t s = 0; s < n; s++)
                    if (flow[s] > 0)
                        paths[s * 256 + pj[s]] += flow[s];
            }
        }
        for (int64_t s = 0; s < n; s++)
            for (int64_t j = 0; j < w; j++)
                reached[s * count + d0 + j] = reach[j * n + s];
    }
    free(flow), free(reach), free(port), free(step), free(h);
    return 0;
}

/* deadlock.dependencies over packets from every switch to lids[lo..hi): seen[(s * ports + out) *
 * ports + next_out] = 1 where switch s forwards a LID over channel (s, out) to a switch that
 * forwards it on to another switch by next_out (a byte per pair: switches × ports² bytes).
 * Returns 0, or -1 when out of memory. */
int loom_dependencies(const int16_t *nxt, const uint8_t *lft, int64_t n, int64_t width, const int64_t *lids,
                      int64_t lo, int64_t hi, int64_t ports, uint8_t *seen)
{
    int16_t *step = malloc(sizeof(int16_t) * BLOCK * n);
    uint8_t *port = malloc(BLOCK * n);
    if (!step || !port) {
        free(step), free(port);
        return -1;
    }
    for (int64_t d0 = lo; d0 < hi; d0 += BLOCK) {
        int64_t w = hi - d0 < BLOCK ? hi - d0 : BLOCK;
        load_block(n, width, lids, d0, w, nxt, step, NULL, NULL, lft, port);
        for (int64_t j = 0; j < w; j++) {
            const int16_t *sj = step + j * n;
            const uint8_t *pj = port + j * n;
            for (int64_t s = 0; s < n; s++) {
                int64_t t = sj[s];
                if (t >= 0 && sj[t] >= 0)
                    seen[(s * ports + pj[s]) * ports + pj[t]] = 1;
            }
        }
    }
    free(step), free(port);
    return 0;
}

/* loads.carried for destinations lids[lo..hi): reached[s, j] (C-ordered [switch, count]) whether a
 * packet to lids[j] from a seed switch passes switch s.  `via[s * 256 + entry]` is the switch
 * behind the port a table entry names (-1: none, not a switch).  Each seed's packet is followed
 * until it meets a switch already reached, whose path onward is marked already (a loop stops
 * there too).  Returns 0, or -1 when out of memory. */
int loom_carried(const uint8_t *lft, const int16_t *via, int64_t n, int64_t width, const int64_t *lids,
                 int64_t lo, int64_t hi, const uint8_t *seeds, int64_t count, uint8_t *reached)
{
    uint8_t *port = malloc(BLOCK * n), *reach = malloc(n);
    if (!port || !reach) {
        free(port), free(reach);
        return -1;
    }
    for (int64_t d0 = lo; d0 < hi; d0 += BLOCK) {
        int64_t w = hi - d0 < BLOCK ? hi - d0 : BLOCK;
        load_block(n, width, lids, d0, w, NULL, NULL, NULL, NULL, lft, port);
        for (int64_t j = 0; j < w; j++) {
            const uint8_t *pj = port + j * n;
            memset(reach, 0, n);
            for (int64_t s = 0; s < n; s++) {
                if (!seeds[s] || reach[s])
                    continue;
                reach[s] = 1;
                for (int64_t x = via[s * 256 + pj[s]]; x >= 0 && !reach[x]; x = via[x * 256 + pj[x]])
                    reach[x] = 1;
            }
            for (int64_t s = 0; s < n; s++)
                reached[s * count + d0 + j] = reach[s];
        }
    }
    free(port), free(reach);
    return 0;
}

/* The plain cases of the engine's legality pass (`asbuilt._legalize`, by `UpDown.candidates`'
 * rule), for switches x = rows[lo..hi) and LIDs lids[0..m): an entry is plainly legal when the
 * switch behind its port (`via[x * 256 + entry]`, -1 unless a switch of x's zone) goes down
 * towards the destination's target t (`target[zone[x] * width + lid]`) if x reaches t going down
 * (`down[x * n + t]`), else up and still reaches t up-then-down (`updown`).  A switch that
 * reaches t neither way heads so for t's turn leaf (`turn_leaf[t]`), the first choice of
 * `candidates` when x reaches that leaf up-then-down (as `candidates` requires: asked here, not
 * inferred from the next switch, since a link that skipped a layer would break the inference).
 * Every other entry whose target is a switch other than x is suspect: a port with no switch of
 * the zone behind it, a wrong direction, a turn elsewhere (Python judges those).
 * counts[i] = the suspect entries of rows[i]; with `mask` (one row asked: hi = lo + 1),
 * mask[j] = 1 where lids[j]'s entry is suspect.  Returns 0. */
int loom_suspect(const uint8_t *lft, const int16_t *via, int64_t n, int64_t width, const int64_t *rows,
                 int64_t lo, int64_t hi, const int64_t *lids, int64_t m, const int64_t *target,
                 const int64_t *zone, const int64_t *layer, const uint8_t *down, const uint8_t *updown,
                 const int64_t *turn_leaf, int64_t *counts, uint8_t *mask)
{
    for (int64_t i = lo; i < hi; i++) {
        int64_t x = rows[i], count = 0;
        const uint8_t *entries = lft + x * width;
        const int64_t *to = target + zone[x] * width;
        const int16_t *behind = via + x * 256;
        for (int64_t j = 0; j < m; j++) {
            int64_t t = to[lids[j]], y = behind[entries[lids[j]]];
            int ok = 1;
            if (t >= 0 && t != x) {
                if (!updown[x * n + t])
                    t = turn_leaf[t]; /* reaches t up-then-down, by its definition (UpDown._turns) */
                if (y < 0 || t < 0)
                    ok = 0;
                else if (down[x * n + t])
                    ok = layer[y] < layer[x] && down[y * n + t];
                else
                    ok = updown[x * n + t] && layer[y] > layer[x] && updown[y * n + t];
            }
            count += !ok;
            if (mask)
                mask[j] = !ok;
        }
        counts[i] = count;
    }
    return 0;
}
