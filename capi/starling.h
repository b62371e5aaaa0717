/* libstarling: a Starling node inside a training process, over a plain C ABI.
 *
 * The node is starlingd's own (node/daemon: NodeRuntime, PairwiseNode, the ExchangeDriver,
 * CURVE, checkpoints, telemetry, metrics): it takes starlingd's options (starlingd --help),
 * reads the same cluster file, speaks the same protocol. What differs is the model: it is the
 * caller's flat buffer, trained by the caller's optimizer; the node exchanges it with its
 * neighbours (SwarmSGD: --algorithm swarmsgd, with any --compression: none, lattice:BITS[:SCALE],
 * topk:K[:GAMMA] or vq:S[:GAMMA], the daemon's own SwarmSgd, QuantizedSwarmSgd, SparseSwarmSgd
 * and VqSwarmSgd with the
 * caller's steps in place of their gradient steps; no data is read, --problem and --data are
 * ignored), or it runs starlingd's own round-based method over the caller's
 * gradients (--algorithm dgd, dpsgd or gradient-tracking: "Round-based methods" below).
 *
 * Lifetime: starling_create (parse and check the options) -> starling_set_model (register the
 * buffer) -> starling_start (the node's thread starts; returns once the node is up) ->
 * starling_step at every step boundary (round-based: starling_iterate, then starling_gradient,
 * per round) -> starling_finish (wait for the end of the run) or
 * starling_stop (stop now, as SIGINT stops starlingd: checkpoint, goodbye) -> starling_destroy.
 *
 * Return codes: every function but starling_destroy and starling_last_error returns
 * STARLING_OK (0), a positive status, or a negative error code; after an error,
 * starling_last_error() gives the message (the option, file, peer or endpoint it is about).
 * No C++ exception crosses this boundary.
 *
 * Ownership: the buffer is the caller's and stays so; it must stay valid (not freed, not moved)
 * from starling_set_model to starling_destroy. Strings passed in are copied. A starling_node
 * is owned by the caller and freed by starling_destroy only.
 *
 * Threads: the node runs its event loop on a background thread that it owns (started by
 * starling_start, joined by starling_finish/starling_stop/starling_destroy). Every function
 * of one node must be called from one thread at a time (the training thread); different nodes
 * may be used from different threads. The process-wide logger (spdlog's default, stderr) is
 * set by starling_create: use one node per process, as starlingd does.
 *
 * The step-boundary rule (why the buffer is never locked): the background thread NEVER reads or
 * writes the caller's buffer. It keeps its own float64 copy X of the model (the state the
 * daemon's SwarmSGD keeps and sends without a copy) and records every merge with a neighbour as
 * a delta D (X after the merge minus X before: every variant's merge is an addition to X,
 * whatever it sent). The buffer is read and written only inside starling_step / starling_sync /
 * starling_finish, on the caller's thread: B += D (the merges since the last boundary), then B
 * is handed over as the node's new X (plus any merge that arrived meanwhile). Between two
 * calls the caller owns the buffer completely: the optimizer updates it in place with no lock
 * and no torn state. Locking the buffer instead would stall the optimizer for the whole time an
 * exchange reads a snapshot or merges (milliseconds for a large model), and a merge landing in
 * the middle of an optimizer step (several kernels over the parameters, with momentum) would
 * mix half-updated parameters. A SwarmSGD merge is an addition (X_i += (S_j - S_i)/2), so
 * applying it at the next boundary keeps the sum of the models over the network exactly, and
 * costs one pass over the model per step. float32 buffers are converted at the boundary (the
 * wire and the algorithms are float64); float64 buffers are not converted.
 *
 * Steps and waiting: starling_step waits until the node has taken the previous step (a
 * one-step pipeline: the caller computes step k+1 while the node takes step k). The node takes
 * no step while SwarmSGD's staleness bound holds it (2H local steps since its last merge) or
 * while the progress gate holds it (--progress-window), exactly as starlingd; a dead or
 * stopped neighbour's offers are abandoned after --exchange-timeout-ms (counted in
 * exchanges_aborted) and it is excluded after three time-outs, so no step waits for a dead
 * peer for long. The timeout argument bounds
 * the wait anyway (STARLING_TIMEOUT: nothing changed, call again).
 *
 * Round-based methods (--algorithm dgd, dpsgd, gradient-tracking; --step is required, since
 * their default is a multiple of 1/L and the caller's objective has no known L): the node's
 * thread runs starlingd's RoundNode, RoundSynchronizer and the method of algorithms/round/
 * unchanged, over a problem whose gradient is the caller's. Where the method needs
 * grad f_i(x_k) (DGD/D-PSGD: at x_k, before mixing; gradient tracking: at the new iterate,
 * inside the round, and once at x0 as it starts), the node's thread publishes x_k and waits
 * for the caller, exactly where the built-in problem would compute the gradient on that thread
 * (it does not poll its sockets meanwhile; neighbours' payloads queue in ZeroMQ, and a
 * neighbour that waits for this node's next payload simply waits). The loop:
 *     starling_start(node);
 *     while ((rc = starling_iterate(node, 200)) == STARLING_OK || rc == STARLING_TIMEOUT) {
 *       if (rc == STARLING_TIMEOUT) continue;
 *       compute g = grad f_i(model buffer);   (full or mini-batch: D-PSGD's batch is yours)
 *       starling_gradient(node, g, length);
 *     }   (STARLING_DONE: the model buffer holds the final model; < 0: the error)
 *     starling_finish(node, -1, NULL);
 * Buffers: the model buffer is written only inside starling_iterate (the iterate, or the final
 * model) and starling_finish/starling_stop, on the caller's thread; the node never holds it
 * otherwise. The gradient buffer is the caller's, of the model's dtype and length, read only
 * inside starling_gradient (copied, then converted to float64) and never kept. Whether the
 * caller's gradient is full or stochastic decides DGD against D-PSGD in fact; --batch is
 * --algorithm dpsgd's requirement only (its own draws are unused).
 * A dead neighbour: a round cannot go on without every neighbour's payload (these methods
 * cannot skip one), so the node waits for it, sending RESENDs, logging "waiting for node K
 * (endpoint)" every --wait-log-s, and gives up after --give-up-s without progress (default
 * 600): the loop ends with exit code 3 and starling_iterate returns STARLING_E_NODE with the
 * node's message ("giving up at step ... waiting for: node K (endpoint)"). A neighbour that
 * says it stopped for good (a BYE: gave up, failed) ends it at once with the same code. The
 * timeout argument bounds each call anyway (STARLING_TIMEOUT: call again). starling_stop while
 * the node waits for a gradient ends the round unmade: the checkpoint (--checkpoint) holds the
 * state before it, and the buffer the last iterate given. The counters: local_steps is the
 * number of gradients the node took in this process (gradient tracking takes one more than
 * --iterations, at x0); exchanges_* and bits_sent stay 0 (the payloads are in --metrics);
 * resumed is not set (the log says it).
 */
#ifndef STARLING_CAPI_STARLING_H_
#define STARLING_CAPI_STARLING_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STARLING_ABI_VERSION 2

#if defined(__GNUC__)
#define STARLING_API __attribute__((visibility("default")))
#else
#define STARLING_API
#endif

/* Return codes. */
#define STARLING_OK 0
#define STARLING_DONE 1          /* starling_step: the budget (--iterations) is done; not counted */
#define STARLING_TIMEOUT 2       /* starling_step / starling_finish: not in time; nothing changed */
#define STARLING_E_ARGUMENT (-1) /* a bad argument or option (see starling_last_error) */
#define STARLING_E_STATE (-2)    /* called in the wrong state (e.g. step before start) */
#define STARLING_E_NODE (-3)     /* the node's loop ended with an error (exit code, message) */
#define STARLING_E_INTERNAL (-4) /* an unexpected failure (message says what) */

/* Buffer element types. */
#define STARLING_FLOAT32 1
#define STARLING_FLOAT64 2

typedef struct starling_node starling_node;

typedef struct starling_counters {
  int64_t local_steps;         /* steps the node has taken (resumed ones included); round-based:
                                  gradients taken in this process */
  int64_t exchanges_initiated; /* merges completed as initiator */
  int64_t exchanges_served;    /* merges completed as responder */
  int64_t exchanges_aborted;   /* offers abandoned (time-outs, BUSY) */
  int64_t bits_sent;           /* payload bits sent */
  int64_t step_timeouts;       /* starling_step calls that returned STARLING_TIMEOUT */
  double step_wait_seconds;    /* time starling_step waited for the node */
  int32_t running;             /* 1 while the node's loop runs */
  int32_t finished;            /* 1 once the budget of local steps is done */
  int32_t exit_code;           /* starlingd's exit code once the loop ended (else -1) */
  int32_t resumed;             /* 1 if the node resumed from --checkpoint */
} starling_counters;

/* The message of the last failing call on this thread ("" if none). Valid until the next call
 * on this thread. */
STARLING_API const char* starling_last_error(void);

/* Parses starlingd's options (argv[0] is ignored) and checks them against the cluster file.
 * On success *out is a new node (not started). --help and --keygen are refused here. */
STARLING_API int starling_create(int argc, const char* const* argv, starling_node** out);

/* Registers the caller's model: `length` values of `dtype` at `data`. Before starling_start;
 * its values are the node's starting point. */
STARLING_API int starling_set_model(starling_node* node, void* data, uint64_t length, int dtype);

/* Starts the node's thread: binds, connects, loads --checkpoint if --resume (and writes the
 * resumed model into the buffer). Returns once the node is up, or the error. */
STARLING_API int starling_start(starling_node* node);

/* The step boundary: the caller has just finished a local step on the buffer. Waits (at most
 * timeout_ms; < 0 = no limit) for the node to take the previous step, applies the merges that
 * arrived since the last boundary to the buffer and hands the step over. STARLING_OK,
 * STARLING_DONE (budget done: the buffer got the merges, no step was counted),
 * STARLING_TIMEOUT, or STARLING_E_NODE if the loop ended with an error. */
STARLING_API int starling_step(starling_node* node, int64_t timeout_ms);

/* Round-based methods: waits (at most timeout_ms; < 0 = no limit) until the node needs the
 * gradient at its next iterate, and writes that iterate into the model buffer. STARLING_OK (the
 * buffer holds x_k: call starling_gradient with grad f_i(x_k)), STARLING_DONE (--iterations
 * done: the buffer holds the final model), STARLING_TIMEOUT (nothing changed: call again), or
 * STARLING_E_NODE (the loop ended with an error, e.g. it gave up on a dead neighbour).
 * Calling it again before starling_gradient returns the same iterate. STARLING_E_STATE for a
 * pairwise node. */
STARLING_API int starling_iterate(starling_node* node, int64_t timeout_ms);

/* Round-based methods: the gradient at the iterate starling_iterate wrote, `length` values of
 * the model's dtype at `gradient` (copied before it returns; never kept). STARLING_E_STATE if
 * the node is not waiting for one (no starling_iterate since the last gradient), or for a
 * pairwise node; STARLING_E_ARGUMENT for another length or a NaN/Inf (nothing taken). */
STARLING_API int starling_gradient(starling_node* node, const void* gradient, uint64_t length);

/* Applies the merges that arrived since the last boundary to the buffer, counting no step. */
STARLING_API int starling_sync(starling_node* node);

/* Waits (at most timeout_ms; < 0 = no limit) for the run to end by itself (every node done,
 * or --linger-s), then writes the node's final model into the buffer and joins the thread.
 * STARLING_OK, STARLING_TIMEOUT (still running), or STARLING_E_NODE (loop ended with an
 * error: *exit_code and starling_last_error say which). exit_code may be NULL. */
STARLING_API int starling_finish(starling_node* node, int64_t timeout_ms, int* exit_code);

/* Stops the node as SIGINT stops starlingd (a checkpoint if --checkpoint, a goodbye to the
 * neighbours), waits for its thread and writes its model into the buffer. */
STARLING_API int starling_stop(starling_node* node);

STARLING_API int starling_get_counters(starling_node* node, starling_counters* out);

/* Stops the node if it runs, joins its thread and frees it. NULL is ignored. */
STARLING_API void starling_destroy(starling_node* node);

/* A node's shard: the rows of a data file that starlingd (and starling-sim) give node `node_id`
 * with the same options, so that a training program can read exactly the rows a daemon of the
 * same run would train on. `argv` holds run options as starlingd takes them (argv[0] is
 * ignored): --data and --nodes are required; --format, --features, --label-column, --partition
 * (iid, label, dirichlet:ALPHA, column:K) and --seed read and split the file as they do for
 * starlingd; other run options are accepted and do not change the rows. On success *rows is a
 * new array of *count 0-based row numbers of the file, ascending (for IDX, image numbers),
 * owned by the caller and freed by starling_free_rows. STARLING_E_ARGUMENT for a bad option,
 * node id or file (starling_last_error names it); *rows is then NULL. No node is created. */
STARLING_API int starling_partition(int argc, const char* const* argv, int32_t node_id,
                                    int64_t** rows, int64_t* count);

/* Frees an array from starling_partition. NULL is ignored. */
STARLING_API void starling_free_rows(int64_t* rows);

#ifdef __cplusplus
}
#endif

#endif /* STARLING_CAPI_STARLING_H_ */
