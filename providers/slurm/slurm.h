/* slurm.h - the Slurm adapter: a private cluster behind slurmrestd (REST
 * API v0.0.38, Slurm 22.05), authenticated with a JWT.
 *
 * Offers are slices of the cluster's nodes (market private, priced at the
 * configured chargeback rates, capacity = slices that fit in what is free
 * now); a launch submits the job's script as a batch job named
 * "tw-<client token>" whose comment carries Tradewind's tags; describe
 * reports the job's state and, once it ended on its own, its exit code;
 * read_output reads the job's output file back.  Config keys, the offer
 * shapes, the state and error tables and how capacity is held:
 * docs/slurm.md. */
#ifndef TW_PROVIDERS_SLURM_SLURM_H
#define TW_PROVIDERS_SLURM_SLURM_H

#include "providers/provider.h"

extern const struct tw_provider_ops tw_provider_slurm;

#endif
