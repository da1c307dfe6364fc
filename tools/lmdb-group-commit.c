// What a durable group commit costs on this disk, by the pages it dirties: the bound of
// `append_concurrent` (docs/BENCHMARKS.md, "Append and replay at C speed").
//
// Each transaction carries GROUP events, as a group commit of the ledger does: per event one
// 300-byte put appended to a log (sequential keys, as `events`), and EXTRA puts at random keys
// of USERS users (as the ledger's per-user `streams` entry and state put: each lands on another
// leaf page). Prints durable commits/s and events/s for EXTRA = 0, 1, 2, 3.
//
// Build: gcc -O2 -o /tmp/lmdb-group-commit tools/lmdb-group-commit.c -llmdb
// Run:   /tmp/lmdb-group-commit DIR [GROUP=50] [USERS=10000] [SECONDS=3]
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define CHECK(x) do { int rc_ = (x); if (rc_) { fprintf(stderr, "%s: %s\n", #x, mdb_strerror(rc_)); exit(1); } } while (0)
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static void be64(uint64_t v, unsigned char *k) { for (int i = 7; i >= 0; i--) { k[i] = v & 0xff; v >>= 8; } }
static uint64_t mix(uint64_t x) { x += 0x9e3779b97f4a7c15ULL; x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL; x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL; return x ^ (x >> 31); }

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "/tmp/lmdb-group-commit";
  long group = argc > 2 ? atol(argv[2]) : 50, users = argc > 3 ? atol(argv[3]) : 10000;
  double seconds = argc > 4 ? atof(argv[4]) : 3;
  unsigned char val[300], key[16], state[600];
  memset(val, 'e', sizeof val); memset(state, 's', sizeof state);
  for (int extra = 0; extra <= 3; extra++) {
    char cmd[512]; snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir); if (system(cmd)) return 1;
    MDB_env *e; CHECK(mdb_env_create(&e)); CHECK(mdb_env_set_mapsize(e, (size_t)8 << 30)); CHECK(mdb_env_set_maxdbs(e, 8));
    CHECK(mdb_env_open(e, dir, 0, 0644));
    MDB_txn *t; MDB_dbi log, idx[3];
    CHECK(mdb_txn_begin(e, NULL, 0, &t)); CHECK(mdb_dbi_open(t, "log", MDB_CREATE, &log));
    const char *names[3] = {"streams", "states", "records"};
    for (int d = 0; d < 3; d++) {
      CHECK(mdb_dbi_open(t, names[d], MDB_CREATE, &idx[d]));
      // Every user present already (a store in use): puts replace or insert among existing keys.
      for (long u = 0; u < users; u++) { be64(mix(u), key); MDB_val k = {8, key}, v = {d == 1 ? sizeof state : 32, state}; CHECK(mdb_put(t, idx[d], &k, &v, 0)); }
    }
    CHECK(mdb_txn_commit(t));
    uint64_t seq = 0, r = 1; long commits = 0; double t0 = now();
    while (now() - t0 < seconds) {
      CHECK(mdb_txn_begin(e, NULL, 0, &t));
      for (long i = 0; i < group; i++) {
        be64(++seq, key); MDB_val k = {8, key}, v = {sizeof val, val}; CHECK(mdb_put(t, log, &k, &v, MDB_APPEND));
        for (int d = 0; d < extra; d++) {
          be64(mix(r++ % users), key); be64(seq, key + 8);
          MDB_val rk = {d == 0 ? 16 : 8, key}, rv = {d == 1 ? sizeof state : 8, state};
          CHECK(mdb_put(t, idx[d], &rk, &rv, 0));
        }
      }
      CHECK(mdb_txn_commit(t)); commits++;
    }
    double dt = now() - t0;
    printf("{\"group\":%ld,\"random_puts_per_event\":%d,\"commits_per_s\":%.0f,\"events_per_s\":%.0f,\"commit_ms\":%.2f}\n",
           group, extra, commits / dt, commits * group / dt, dt * 1000 / commits);
    mdb_env_close(e);
  }
  return 0;
}
