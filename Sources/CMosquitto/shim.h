// Eclipse Mosquitto's client library (libmosquitto 2.0) for VigilMQTT: driven from the node's own
// epoll loop through mosquitto_socket / loop_read / loop_write / loop_misc; no library threads.
#include <mosquitto.h>
