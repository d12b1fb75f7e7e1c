#ifndef VIGIL_CBLUEZ_SHIM_H
#define VIGIL_CBLUEZ_SHIM_H
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <bluetooth/l2cap.h>

// Helpers Swift cannot express directly (socket address structs, ioctls with variadic
// arguments, libbluetooth's inline filter macros). Each returns -1 with errno set on failure,
// like the calls it wraps; the Swift side (VigilRadio/HCISocket.swift) turns that into a typed
// error in one place. Prefix: cvigil_hci_.

/// An HCI socket bound to `device` on `channel` (HCI_CHANNEL_RAW or HCI_CHANNEL_USER), or,
/// with device HCI_DEV_NONE, an unbound raw socket that hears the stack's device notifications.
static inline int cvigil_hci_open(uint16_t device, uint16_t channel) {
    int fd = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, BTPROTO_HCI);
    if (fd < 0) return -1;
    struct sockaddr_hci address;
    memset(&address, 0, sizeof(address));
    address.hci_family = AF_BLUETOOTH;
    address.hci_dev = device;
    address.hci_channel = channel;
    if (bind(fd, (struct sockaddr *)&address, sizeof(address)) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/// On a raw-channel socket: deliver every event packet (the kernel filters by default).
static inline int cvigil_hci_filter_all_events(int fd) {
    struct hci_filter filter;
    hci_filter_clear(&filter);
    hci_filter_set_ptype(HCI_EVENT_PKT, &filter);
    hci_filter_all_events(&filter);
    return setsockopt(fd, SOL_HCI, HCI_FILTER, &filter, sizeof(filter));
}

/// On an unbound raw socket: deliver only the stack-internal device notifications.
static inline int cvigil_hci_filter_stack_events(int fd) {
    struct hci_filter filter;
    hci_filter_clear(&filter);
    hci_filter_set_ptype(HCI_EVENT_PKT, &filter);
    hci_filter_set_event(EVT_STACK_INTERNAL, &filter);
    return setsockopt(fd, SOL_HCI, HCI_FILTER, &filter, sizeof(filter));
}

/// One adapter's id, name, address (as bytes, least significant first) and flags.
static inline int cvigil_hci_device_info(int fd, uint16_t device, char name[8], uint8_t address[6], uint32_t *flags) {
    struct hci_dev_info info;
    memset(&info, 0, sizeof(info));
    info.dev_id = device;
    if (ioctl(fd, HCIGETDEVINFO, (void *)&info) < 0) return -1;
    memcpy(name, info.name, 8);
    memcpy(address, info.bdaddr.b, 6);
    *flags = info.flags;
    return 0;
}

/// The ids of the registered adapters (at most `max`); returns how many.
static inline int cvigil_hci_device_ids(int fd, uint16_t *ids, int max) {
    struct { uint16_t count; struct hci_dev_req requests[HCI_MAX_DEV]; } list;
    memset(&list, 0, sizeof(list));
    list.count = HCI_MAX_DEV;
    if (ioctl(fd, HCIGETDEVLIST, (void *)&list) < 0) return -1;
    int n = list.count < max ? list.count : max;
    for (int i = 0; i < n; i++) ids[i] = list.requests[i].dev_id;
    return n;
}

static inline int cvigil_hci_is_up(uint32_t flags) { return hci_test_bit(HCI_UP, &flags) ? 1 : 0; }

/// The kernel's management channel (what bluetoothd uses), non-blocking.
static inline int cvigil_mgmt_open(void) { return cvigil_hci_open(HCI_DEV_NONE, HCI_CHANNEL_CONTROL); }

/// Management "Set Powered" (opcode 0x0005) for adapter `index`: the kernel powers the adapter up
/// or down in the background and answers on the socket; the stack's UP/DOWN notification says
/// when it is done. Unlike the HCIDEVUP ioctl, nothing waits for the controller.
static inline int cvigil_mgmt_set_powered(int fd, uint16_t index, int on) {
    uint8_t packet[7] = { 0x05, 0x00, (uint8_t)(index & 0xff), (uint8_t)(index >> 8), 0x01, 0x00, (uint8_t)(on ? 1 : 0) };
    ssize_t n = write(fd, packet, sizeof(packet));
    return n == (ssize_t)sizeof(packet) ? 0 : -1;
}

// --- L2CAP on LE's ATT fixed channel (CID 4) --------------------------------------------------
// What BlueZ's own btgatt-server/-client do: the kernel carries L2CAP, reassembles ACL
// fragments and makes the LE connection; one SOCK_SEQPACKET read is one ATT PDU.
// Prefix: cvigil_att_. Addresses are 6 bytes, least significant first (as bdaddr_t); address
// types are BDADDR_LE_PUBLIC (1) or BDADDR_LE_RANDOM (2).

static inline void cvigil_att_address(struct sockaddr_l2 *address, const uint8_t bytes[6], uint8_t type) {
    memset(address, 0, sizeof(*address));
    address->l2_family = AF_BLUETOOTH;
    memcpy(address->l2_bdaddr.b, bytes, 6);
    address->l2_cid = htobs(4);
    address->l2_bdaddr_type = type;
}

/// A non-blocking ATT socket bound to the adapter with address `local`, security level low (the
/// box's services are open, and say so; a link to a bonded sensor asks for encryption once it
/// is up: cvigil_att_raise_security).
static inline int cvigil_att_socket(const uint8_t local[6], uint8_t type) {
    int fd = socket(AF_BLUETOOTH, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, BTPROTO_L2CAP);
    if (fd < 0) return -1;
    struct sockaddr_l2 address;
    cvigil_att_address(&address, local, type);
    struct bt_security security;
    memset(&security, 0, sizeof(security));
    security.level = BT_SECURITY_LOW;
    if (bind(fd, (struct sockaddr *)&address, sizeof(address)) < 0
        || setsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &security, sizeof(security)) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/// Starts a connection to `peer` (the kernel makes the LE connection): 0, or -1 with EINPROGRESS
/// while it is under way (the socket turns writable when it is done; see cvigil_att_error).
static inline int cvigil_att_connect(int fd, const uint8_t peer[6], uint8_t type) {
    struct sockaddr_l2 address;
    cvigil_att_address(&address, peer, type);
    return connect(fd, (struct sockaddr *)&address, sizeof(address));
}

/// Accepts a connection: its descriptor (non-blocking), with the peer's address and type.
static inline int cvigil_att_accept(int fd, uint8_t peer[6], uint8_t *type) {
    struct sockaddr_l2 address;
    socklen_t length = sizeof(address);
    memset(&address, 0, sizeof(address));
    int connection = accept4(fd, (struct sockaddr *)&address, &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (connection < 0) return -1;
    memcpy(peer, address.l2_bdaddr.b, 6);
    *type = address.l2_bdaddr_type;
    return connection;
}

/// The pending error of a socket (SO_ERROR): 0, or the errno a connection attempt ended with.
static inline int cvigil_att_error(int fd) {
    int value = 0;
    socklen_t length = sizeof(value);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) < 0) return errno;
    return value;
}

/// On a link that is up: asks the kernel for `level` (BT_SECURITY_MEDIUM: encrypted). 0: the
/// kernel started encrypting (or pairing) and the socket waits (not writable) until it is done;
/// -1 with EINVAL: the link is already as secure as asked, or the kernel cannot make it so
/// (read the level to tell which).
static inline int cvigil_att_raise_security(int fd, uint8_t level) {
    struct bt_security security;
    memset(&security, 0, sizeof(security));
    security.level = level;
    return setsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &security, sizeof(security));
}

/// The link's security level (BT_SECURITY_LOW: not encrypted) and its key's size in bytes.
static inline int cvigil_att_security(int fd, uint8_t *level, uint8_t *key_size) {
    struct bt_security security;
    memset(&security, 0, sizeof(security));
    socklen_t length = sizeof(security);
    if (getsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &security, &length) < 0) return -1;
    *level = security.level;
    *key_size = security.key_size;
    return 0;
}

/// Reads one PDU; sets *truncated when it was longer than `capacity` (MSG_TRUNC).
static inline ssize_t cvigil_att_receive(int fd, uint8_t *buffer, size_t capacity, int *truncated) {
    ssize_t n = recv(fd, buffer, capacity, MSG_TRUNC);
    if (n < 0) return -1;
    *truncated = (size_t)n > capacity;
    return (size_t)n > capacity ? (ssize_t)capacity : n;
}
#endif
