/*
 * mhd.h - libmicrohttpd, loaded when `faucet serve` starts.
 *
 * libmicrohttpd brings GnuTLS, nettle, p11-kit and more; linked into
 * `faucet`, every command would map them at exec (tests/cli/
 * test_startup.sh forbids it, as for libpq).  So the command is not linked
 * against it: serve_mhd_load() opens it with dlopen() and the MHD_ names
 * below call through its table.  Include this instead of <microhttpd.h>.
 */
#ifndef FAUCET_SERVE_MHD_H
#define FAUCET_SERVE_MHD_H

#include <microhttpd.h>

typedef struct {
	struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port,
					   MHD_AcceptPolicyCallback apc, void *apc_cls,
					   MHD_AccessHandlerCallback dh, void *dh_cls, ...);
	void (*stop_daemon)(struct MHD_Daemon *daemon);
	MHD_socket (*quiesce_daemon)(struct MHD_Daemon *daemon);
	const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *daemon,
						       enum MHD_DaemonInfoType info_type, ...);
	enum MHD_Result (*is_feature_supported)(enum MHD_FEATURE feature);
	const char *(*lookup_connection_value)(struct MHD_Connection *connection,
					       enum MHD_ValueKind kind, const char *key);
	enum MHD_Result (*queue_response)(struct MHD_Connection *connection,
					  unsigned int status_code, struct MHD_Response *response);
	void (*suspend_connection)(struct MHD_Connection *connection);
	void (*resume_connection)(struct MHD_Connection *connection);
	struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer,
							    enum MHD_ResponseMemoryMode mode);
	struct MHD_Response *(*create_response_from_callback)(uint64_t size, size_t block_size,
							      MHD_ContentReaderCallback crc,
							      void *crc_cls,
							      MHD_ContentReaderFreeCallback crfc);
	enum MHD_Result (*add_response_header)(struct MHD_Response *response, const char *header,
					       const char *content);
	void (*destroy_response)(struct MHD_Response *response);
} serve_mhd_table;

extern serve_mhd_table serve_mhd;

/* Open libmicrohttpd and fill serve_mhd, once: 0, or the error printed
 * (naming the library and its Debian package) and CLI_EXIT_FAILED. */
int serve_mhd_load(void);

#define MHD_start_daemon (*serve_mhd.start_daemon)
#define MHD_stop_daemon (*serve_mhd.stop_daemon)
#define MHD_quiesce_daemon (*serve_mhd.quiesce_daemon)
#define MHD_get_daemon_info (*serve_mhd.get_daemon_info)
#define MHD_is_feature_supported (*serve_mhd.is_feature_supported)
#define MHD_lookup_connection_value (*serve_mhd.lookup_connection_value)
#define MHD_queue_response (*serve_mhd.queue_response)
#define MHD_suspend_connection (*serve_mhd.suspend_connection)
#define MHD_resume_connection (*serve_mhd.resume_connection)
#define MHD_create_response_from_buffer (*serve_mhd.create_response_from_buffer)
#define MHD_create_response_from_callback (*serve_mhd.create_response_from_callback)
#define MHD_add_response_header (*serve_mhd.add_response_header)
#define MHD_destroy_response (*serve_mhd.destroy_response)

#endif
