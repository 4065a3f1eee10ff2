#ifndef TANDEM_PORT_MAPPING_H
#define TANDEM_PORT_MAPPING_H

#include <stddef.h>
#include <stdint.h>

/* Port mapping on a home router through Debian's libnatpmp (NAT-PMP, RFC 6886) and libminiupnpc (UPnP-IGD).
 * Every call blocks for at most its timeout; callers run them off their event loops. Errors are returned as
 * negative numbers (NAT-PMP: libnatpmp's NATPMP_ERR_*; UPnP: the UPnP error code, negated) with a message in
 * `error` when it is given. */

/* NAT-PMP: the router's external IPv4 address (into `address`, at least 16 bytes). */
int tdm_natpmp_external_address(int timeout_ms, char *address, size_t address_size, char *error, size_t error_size);

/* NAT-PMP: maps `internal_port` (TCP when `udp` is 0) to `external_port` (a wish; 0: any) for `lifetime` seconds
 * (0 removes the mapping). The router's answer: the external port and the lifetime it granted. */
int tdm_natpmp_map(int udp, uint16_t internal_port, uint16_t external_port, uint32_t lifetime, int timeout_ms,
                   uint16_t *mapped_port, uint32_t *granted_lifetime, char *error, size_t error_size);

/* A UPnP Internet Gateway Device found by SSDP. */
typedef struct tdm_upnp_gateway tdm_upnp_gateway;

/* Looks for an IGD, waiting about `timeout_ms` for each device type asked for (SSDP on the LAN; at least a second
 * each in libminiupnpc, so the whole search may take several times longer). NULL when none answered (`error` says why). */
tdm_upnp_gateway *tdm_upnp_discover(int timeout_ms, char *error, size_t error_size);
void tdm_upnp_free(tdm_upnp_gateway *gateway);
/* This machine's address on the gateway's LAN (the mapping's internal client). */
const char *tdm_upnp_lan_address(const tdm_upnp_gateway *gateway);
/* Whether the gateway says its WAN connection is up. */
int tdm_upnp_connected(const tdm_upnp_gateway *gateway);
int tdm_upnp_external_address(const tdm_upnp_gateway *gateway, char *address, size_t address_size,
                              char *error, size_t error_size);
/* Adds (or renews) external_port → lan address:internal_port for `lease` seconds (0: until removed). */
int tdm_upnp_add(const tdm_upnp_gateway *gateway, int udp, uint16_t external_port, uint16_t internal_port,
                 uint32_t lease, const char *description, char *error, size_t error_size);
int tdm_upnp_delete(const tdm_upnp_gateway *gateway, int udp, uint16_t external_port, char *error, size_t error_size);

/* UPnP error codes the caller acts on. */
#define TDM_UPNP_ONLY_PERMANENT_LEASES 725
#define TDM_UPNP_CONFLICT 718

#endif
