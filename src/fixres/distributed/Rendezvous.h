// Rendezvous: how the ranks of a job meet before the process group exists. Opens the job's store
// (TCPStore served by rank 0, or FileStore), waits until every rank has arrived, and finds the
// local address that the peers can reach.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <string>

#include "fixres/distributed/World.h"

namespace fixres::distributed {

// Opens the store of `world` and waits until all of its ranks have announced themselves, both
// within world.timeoutSeconds. The store returned holds the keys of this job only (prefixed by
// its job id), so a reused FileStore or store port cannot mix two jobs. Throws UsageError when
// the world has no rendezvous, DistributedError when the store cannot be opened, naming the
// ranks that did not join, or when the store did not answer at all within 2 x timeoutSeconds +
// 10 s (another program on the store's port).
c10::intrusive_ptr<c10d::Store> rendezvous(const WorldInfo& world);

// The local IPv4 address that routes to `host` (an IPv4 address): what Gloo must bind so that
// the peers can reach this rank. Empty when `host` is not an IPv4 address or has no route.
std::string localAddressTowards(const std::string& host, int port);

}  // namespace fixres::distributed
