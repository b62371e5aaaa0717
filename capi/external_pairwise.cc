#include "capi/external_pairwise.h"

#include <stdexcept>
#include <utility>

#include "algorithms/pairwise/swarm_sgd.h"

namespace starling::capi {

ExternalPairwise::ExternalPairwise(std::unique_ptr<algorithms::PairwiseAlgorithm> inner,
                                   StepHandover* handover)
    : inner_(std::move(inner)),
      steps_(dynamic_cast<algorithms::TakesExternalSteps*>(inner_.get())),
      handover_(handover) {
  if (steps_ == nullptr) {
    throw std::invalid_argument("--algorithm " + inner_->name() +
                                ": cannot take the caller's steps through the C ABI");
  }
}

void ExternalPairwise::LocalStep() {
  handover_->Take(&x_);
  steps_->ExternalStep(x_);
  handover_->Publish(inner_->counters());
}

void ExternalPairwise::EndLocalSteps() {
  inner_->EndLocalSteps();
  handover_->EndSteps();
}

std::shared_ptr<const Vec> ExternalPairwise::BeginExchange(int peer, uint64_t seq) {
  return Tracked([&] { return inner_->BeginExchange(peer, seq); });
}

bool ExternalPairwise::CompleteExchange(uint64_t seq, const Eigen::Ref<const Vec>& their_message) {
  return Tracked([&] { return inner_->CompleteExchange(seq, their_message); });
}

void ExternalPairwise::AbortExchange(bool may_still_reply) {
  Tracked([&] {
    inner_->AbortExchange(may_still_reply);
    return 0;
  });
}

void ExternalPairwise::AbortCrossedExchange() {
  Tracked([&] {
    inner_->AbortCrossedExchange();
    return 0;
  });
}

std::shared_ptr<const Vec> ExternalPairwise::Respond(int peer,
                                                     const Eigen::Ref<const Vec>& their_message) {
  return Tracked([&] { return inner_->Respond(peer, their_message); });
}

ExternalPairwise::MergeResult ExternalPairwise::CompleteExchangeChecked(
    uint64_t seq, const Eigen::Ref<const Vec>& their_message, size_t* first_bad) {
  return Tracked([&] { return inner_->CompleteExchangeChecked(seq, their_message, first_bad); });
}

std::shared_ptr<const Vec> ExternalPairwise::RespondChecked(
    int peer, const Eigen::Ref<const Vec>& their_message, size_t* first_bad) {
  return Tracked([&] { return inner_->RespondChecked(peer, their_message, first_bad); });
}

bool ExternalPairwise::SaveState(algorithms::AlgorithmState* state) const {
  return inner_->SaveState(state);
}

void ExternalPairwise::LoadState(const algorithms::AlgorithmState& state) {
  if (!state.vectors.empty() && state.vectors[0].size() != inner_->Model().size()) {
    throw std::invalid_argument(
        "checkpoint: a model of " + std::to_string(state.vectors[0].size()) +
        " values, the buffer has " + std::to_string(inner_->Model().size()));
  }
  inner_->LoadState(state);
  handover_->SetResumed(inner_->Model());
  handover_->Publish(inner_->counters());
}

std::unique_ptr<algorithms::PairwiseAlgorithm> MakeExternalSwarmSgd(
    const algorithms::NodeSetup& setup, int local_steps, const std::string& compression,
    StepHandover* handover) {
  if (local_steps < 1) throw std::invalid_argument("--local-steps: must be >= 1");
  // The step and the batch are the gradient steps', which the caller makes: unused here.
  const algorithms::ScheduledStep unused_step{1.0, algorithms::StepSchedule()};
  const int unused_batch = 1;
  std::unique_ptr<algorithms::PairwiseAlgorithm> inner =
      algorithms::MakeSwarmSgdVariant(setup, unused_step, unused_batch, local_steps, compression,
                                      /*iterations=*/0, algorithms::SwarmSgdParams());
  return std::make_unique<ExternalPairwise>(std::move(inner), handover);
}

}  // namespace starling::capi
