"""lda_sklearn.py — scikit-learn's LatentDirichletAllocation beside rally-lda.

    python3 lda_sklearn.py TRAIN.svm HELDOUT.svm TOPICS.csv MODEL PERPLEXITY [MAX_RATIO [PASSES]]

TRAIN and HELDOUT are LIBSVM documents (rally-datagen --docs), TOPICS.csv the
true topics the generator drew them from (--topics-out), MODEL a rally-lda
--model-out file and PERPLEXITY the figure rally-lda printed for HELDOUT.

Every model is scored by one rule, heldout.c's: topics fixed, each held-out
document's mix folded in by 50 EM steps from uniform with the model's alpha,
then exp(-log likelihood / words).  Scoring rally-lda's counts here must give
the figure rally-lda printed (to 1e-9: the check that the two rules are one).
scikit-learn fits by variational Bayes (batch, the same priors, PASSES
passes, default 20: more change its score little and cost seconds each), not
by Gibbs sampling, so its topics differ; the
comparison is loose on purpose: rally-lda must score within MAX_RATIO
(default 1.05) of scikit-learn and far below the uniform model's perplexity
(the vocabulary's size).  The true topics' score is printed as the floor.
scikit-learn's own perplexity() (its variational bound) is printed too, for
the record, but it is another rule and is not compared.
"""
import struct
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.decomposition import LatentDirichletAllocation


def read_model(path):
    b = open(path, "rb").read()
    assert b[:8] == b"RALLYLDA", "not a rally-lda model"
    topics, vocab = struct.unpack_from("<II", b, 12)
    iteration, seed = struct.unpack_from("<QQ", b, 24)
    alpha, beta = struct.unpack_from("<dd", b, 40)
    counts = np.frombuffer(b, dtype="<u4", count=topics * vocab, offset=64)
    counts = counts.reshape(vocab, topics).T.astype(np.float64)  # topics x vocab
    phi = (counts + beta) / (counts.sum(axis=1, keepdims=True) + vocab * beta)
    return phi, alpha, beta, iteration


def perplexity(phi, alpha, x):
    """heldout.c's rule, on the rows of the sparse matrix x."""
    k, v = phi.shape
    ll, words = 0.0, 0.0
    for d in range(x.shape[0]):
        row = x.getrow(d)
        idx, cnt = row.indices, row.data
        keep = idx < v
        idx, cnt = idx[keep], cnt[keep]
        n = cnt.sum()
        if n == 0:
            continue
        f = phi[:, idx]  # k x words
        theta = np.full(k, 1.0 / k)
        for _ in range(50):
            r = theta[:, None] * f
            r /= r.sum(axis=0, keepdims=True)
            theta = (alpha + (r * cnt).sum(axis=1)) / (n + k * alpha)
        ll += float((cnt * np.log(theta @ f)).sum())
        words += n
    return float(np.exp(-ll / words))


def main():
    train, heldout, topics_csv, model, printed = sys.argv[1:6]
    max_ratio = float(sys.argv[6]) if len(sys.argv) > 6 else 1.05
    passes = int(sys.argv[7]) if len(sys.argv) > 7 else 20
    printed = float(printed)
    phi, alpha, beta, iters = read_model(model)
    k, v = phi.shape
    x, _ = load_svmlight_file(train, n_features=v, zero_based=False)
    h, _ = load_svmlight_file(heldout, zero_based=False)
    true_phi = np.loadtxt(topics_csv, delimiter=",", ndmin=2)
    true_phi = true_phi / true_phi.sum(axis=1, keepdims=True)
    if true_phi.shape[1] > v:
        true_phi = true_phi[:, :v] / true_phi[:, :v].sum(axis=1, keepdims=True)

    ours = perplexity(phi, alpha, h)
    if abs(ours - printed) > 1e-9 * printed:
        sys.exit(f"lda_sklearn: scoring rally-lda's model here gives {ours!r}, "
                 f"rally-lda printed {printed!r}: the two rules differ")
    t0 = time.monotonic()
    lda = LatentDirichletAllocation(n_components=k, doc_topic_prior=alpha,
                                    topic_word_prior=beta, learning_method="batch",
                                    max_iter=passes, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lda.fit(x)
    fit_s = time.monotonic() - t0
    sk_phi = lda.components_ / lda.components_.sum(axis=1, keepdims=True)
    theirs = perplexity(sk_phi, alpha, h)
    floor = perplexity(true_phi, alpha, h)
    print(f"perplexity on {h.shape[0]} held-out documents (fold-in, 50 EM steps):")
    print(f"  rally-lda     {ours:10.3f}  ({iters} Gibbs sweeps)")
    print(f"  scikit-learn  {theirs:10.3f}  ({lda.n_iter_} variational passes, {fit_s:.1f} s; "
          f"its own bound: {lda.perplexity(h):.3f})")
    print(f"  true topics   {floor:10.3f}")
    print(f"  uniform       {v:10.3f}")
    print(f"ratio rally-lda / scikit-learn: {ours / theirs:.4f} (at most {max_ratio})")
    if ours > max_ratio * theirs:
        sys.exit("lda_sklearn: rally-lda's perplexity is over the bound")
    if ours > 0.8 * v:
        sys.exit("lda_sklearn: rally-lda's perplexity is near the uniform model's")


if __name__ == "__main__":
    main()
