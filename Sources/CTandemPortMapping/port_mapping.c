#include "tandem_port_mapping.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/time.h>

#define ENABLE_STRNATPMPERR 1
#include <natpmp.h>
#include <miniupnpc/miniupnpc.h>
#include <miniupnpc/upnpcommands.h>
#include <miniupnpc/upnperrors.h>

static void say(char *error, size_t size, const char *text) {
    if (error && size > 0) snprintf(error, size, "%s", text);
}

static long long now_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* Sends nothing itself: waits for the answer to the request `p` has pending, retrying on libnatpmp's schedule
 * (250 ms, doubling) until `deadline`. */
static int natpmp_answer(natpmp_t *p, natpmpresp_t *response, long long deadline) {
    for (;;) {
        struct timeval timeout;
        if (getnatpmprequesttimeout(p, &timeout) < 0) return NATPMP_ERR_GETTIMEOFDAYERR;
        long long left = deadline - now_ms();
        if (left <= 0) return NATPMP_ERR_NOGATEWAYSUPPORT;
        long long wait = (long long)timeout.tv_sec * 1000 + timeout.tv_usec / 1000;
        if (wait > left) { timeout.tv_sec = left / 1000; timeout.tv_usec = (left % 1000) * 1000; }
        fd_set fds;
        FD_ZERO(&fds);
        FD_SET(p->s, &fds);
        if (select(p->s + 1, &fds, NULL, NULL, &timeout) < 0 && errno != EINTR) return NATPMP_ERR_SOCKETERROR;
        int result = readnatpmpresponseorretry(p, response);
        if (result != NATPMP_TRYAGAIN) return result;
    }
}

int tdm_natpmp_external_address(int timeout_ms, char *address, size_t address_size, char *error, size_t error_size) {
    natpmp_t p;
    natpmpresp_t response;
    int result = initnatpmp(&p, 0, 0);
    if (result < 0) { say(error, error_size, strnatpmperr(result)); return result; }
    result = sendpublicaddressrequest(&p);
    if (result >= 0) result = natpmp_answer(&p, &response, now_ms() + timeout_ms);
    if (result >= 0) {
        if (!inet_ntop(AF_INET, &response.pnu.publicaddress.addr, address, (socklen_t)address_size)) result = NATPMP_ERR_INVALIDARGS;
    }
    if (result < 0) say(error, error_size, strnatpmperr(result));
    closenatpmp(&p);
    return result < 0 ? result : 0;
}

int tdm_natpmp_map(int udp, uint16_t internal_port, uint16_t external_port, uint32_t lifetime, int timeout_ms,
                   uint16_t *mapped_port, uint32_t *granted_lifetime, char *error, size_t error_size) {
    natpmp_t p;
    natpmpresp_t response;
    int result = initnatpmp(&p, 0, 0);
    if (result < 0) { say(error, error_size, strnatpmperr(result)); return result; }
    result = sendnewportmappingrequest(&p, udp ? NATPMP_PROTOCOL_UDP : NATPMP_PROTOCOL_TCP, internal_port,
                                       external_port, lifetime);
    if (result >= 0) result = natpmp_answer(&p, &response, now_ms() + timeout_ms);
    if (result >= 0) {
        *mapped_port = response.pnu.newportmapping.mappedpublicport;
        *granted_lifetime = response.pnu.newportmapping.lifetime;
    } else {
        say(error, error_size, strnatpmperr(result));
    }
    closenatpmp(&p);
    return result < 0 ? result : 0;
}

struct tdm_upnp_gateway {
    struct UPNPUrls urls;
    struct IGDdatas data;
    char lan_address[64];
    int connected;
};

tdm_upnp_gateway *tdm_upnp_discover(int timeout_ms, char *error, size_t error_size) {
    int status = 0;
    /* libminiupnpc asks for several device types one after the other (IGD v2 and v1, two WAN services, the root
     * device) and waits for each that nobody answers, a second at least: this call can take several times
     * `timeout_ms` when no router answers. Callers stop waiting for it after their own deadline. */
    int delay = timeout_ms / 4 < 100 ? 100 : timeout_ms / 4;
    struct UPNPDev *devices = upnpDiscover(delay, NULL, NULL, UPNP_LOCAL_PORT_ANY, 0, 2, &status);
    if (!devices) {
        say(error, error_size, status == UPNPDISCOVER_SUCCESS ? "no UPnP device answered" : "UPnP discovery failed");
        return NULL;
    }
    tdm_upnp_gateway *gateway = calloc(1, sizeof *gateway);
    if (!gateway) { freeUPNPDevlist(devices); say(error, error_size, "out of memory"); return NULL; }
    int found = UPNP_GetValidIGD(devices, &gateway->urls, &gateway->data, gateway->lan_address,
                                 (int)sizeof gateway->lan_address);
    freeUPNPDevlist(devices);
    if (found == 1 || found == 2) {
        gateway->connected = found == 1;
        return gateway;
    }
    if (found != 0) FreeUPNPUrls(&gateway->urls);
    free(gateway);
    say(error, error_size, found == 0 ? "no UPnP device answered" : "a UPnP device answered but it is no Internet gateway");
    return NULL;
}

void tdm_upnp_free(tdm_upnp_gateway *gateway) {
    if (!gateway) return;
    FreeUPNPUrls(&gateway->urls);
    free(gateway);
}

const char *tdm_upnp_lan_address(const tdm_upnp_gateway *gateway) { return gateway->lan_address; }

int tdm_upnp_connected(const tdm_upnp_gateway *gateway) { return gateway->connected; }

static int upnp_failed(int code, char *error, size_t error_size) {
    const char *text = strupnperror(code);
    if (error && error_size > 0) snprintf(error, error_size, "UPnP error %d (%s)", code, text ? text : "unknown");
    return code > 0 ? -code : (code == 0 ? -1 : code);
}

int tdm_upnp_external_address(const tdm_upnp_gateway *gateway, char *address, size_t address_size,
                              char *error, size_t error_size) {
    char text[40] = {0};
    int code = UPNP_GetExternalIPAddress(gateway->urls.controlURL, gateway->data.first.servicetype, text);
    if (code != UPNPCOMMAND_SUCCESS) return upnp_failed(code, error, error_size);
    snprintf(address, address_size, "%s", text);
    return 0;
}

int tdm_upnp_add(const tdm_upnp_gateway *gateway, int udp, uint16_t external_port, uint16_t internal_port,
                 uint32_t lease, const char *description, char *error, size_t error_size) {
    char external[8], internal[8], duration[12];
    snprintf(external, sizeof external, "%u", external_port);
    snprintf(internal, sizeof internal, "%u", internal_port);
    snprintf(duration, sizeof duration, "%u", lease);
    int code = UPNP_AddPortMapping(gateway->urls.controlURL, gateway->data.first.servicetype, external, internal,
                                   gateway->lan_address, description, udp ? "UDP" : "TCP", NULL, duration);
    return code == UPNPCOMMAND_SUCCESS ? 0 : upnp_failed(code, error, error_size);
}

int tdm_upnp_delete(const tdm_upnp_gateway *gateway, int udp, uint16_t external_port, char *error, size_t error_size) {
    char external[8];
    snprintf(external, sizeof external, "%u", external_port);
    int code = UPNP_DeletePortMapping(gateway->urls.controlURL, gateway->data.first.servicetype, external,
                                      udp ? "UDP" : "TCP", NULL);
    return code == UPNPCOMMAND_SUCCESS ? 0 : upnp_failed(code, error, error_size);
}
