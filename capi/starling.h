/* libstarling: a Starling node inside a training process, over a plain C ABI (issue 18).
 *
 * The node is starlingd's own (node/daemon: NodeRuntime, PairwiseNode, the ExchangeDriver,
 * CURVE, checkpoints, telemetry, metrics): it takes starlingd's options (starlingd --help),
 * reads the same cluster file, speaks the same protocol. What differs is the model: it is the
 * caller's flat buffer, trained by the caller's optimizer; the node exchanges it with its
 * neighbours (SwarmSGD: --algorithm swarmsgd, full precision; no data is read, --problem and
 * --data are ignored). Round-based methods are not available through this ABI yet.
 *
 * Lifetime: starling_create (parse and check the options) -> starling_set_model (register the
 * buffer) -> starling_start (the node's thread starts; returns once the node is up) ->
 * starling_step at every step boundary -> starling_finish (wait for the end of the run) or
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
 * a delta D. The buffer is read and written only inside starling_step / starling_sync /
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
 */
#ifndef STARLING_CAPI_STARLING_H_
#define STARLING_CAPI_STARLING_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STARLING_ABI_VERSION 1

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
  int64_t local_steps;         /* steps the node has taken (resumed ones included) */
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

#ifdef __cplusplus
}
#endif

#endif /* STARLING_CAPI_STARLING_H_ */
