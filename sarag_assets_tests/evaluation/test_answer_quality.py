"""Which gold resolution an answer is scored against (`evaluation.answer_quality.resolution_nuggets`)."""

from sarag_assets.evaluation.answer_quality import resolution_nuggets
from sarag_assets.evaluation.queries import EvalQuery

THREAD = [{"role": "user", "text": "my wifi drops after suspend on 20.04"},
          {"role": "agent", "text": "Reload the driver after resume: sudo modprobe -r iwlwifi && sudo modprobe iwlwifi."}]
QUERY = EvalQuery("q1", [{"speaker": "user", "text": "still drops after suspend"}], ["t1"])


def test_the_gold_threads_final_helper_answer_is_the_resolution():
    nuggets = resolution_nuggets(QUERY, {}, lambda: {"t1": THREAD})
    assert nuggets and "sudo modprobe -r iwlwifi" in " ".join(nuggets)


def test_a_thread_whose_helpers_last_word_is_a_question_holds_no_resolution():
    asked = THREAD + [{"role": "agent", "text": "which card is it, what does lspci say?"}]
    assert resolution_nuggets(QUERY, {}, lambda: {"t1": asked}) is None


def test_a_truth_files_resolution_comes_before_the_thread():
    asked = THREAD + [{"role": "agent", "text": "which card is it?"}]
    nuggets = resolution_nuggets(QUERY, {"t1": "Install the firmware package; reboot the machine."},
                                 lambda: {"t1": asked})
    assert nuggets == ["Install the firmware package", "reboot the machine."]
