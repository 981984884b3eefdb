// Reading one copy of each value from an exporter that writes one per rank (RankCopies,
// exporter_profile.h): SGLang with --enable-metrics-for-all-schedulers logs the same batch from
// every attention-TP rank, so a sum over its series would count each request once per rank.
//
// Thread-safety: pure function.
#ifndef MODELMETRICS_AGGREGATION_RANK_COPIES_H_
#define MODELMETRICS_AGGREGATION_RANK_COPIES_H_

#include "exporter_profile.h"
#include "modelmetrics/scrape.h"

namespace modelmetrics::deployment {

// `scrape` with, among the samples that differ only in `copies.labels`, those of the lowest
// `copies.order` value kept (numeric order; a value that is not a number sorts after every
// number, then by its text). A sample without the order label is its group's only copy.
Scrape OneCopyPerRank(const Scrape& scrape, const RankCopies& copies);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_RANK_COPIES_H_
