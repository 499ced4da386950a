#include "collective.h"

#include <stdio.h>

#define MESSAGE_LEN 1024

taso_err_t taso_agree(MPI_Comm comm, taso_err_t err) {
  /* MPI calls are not checked: the communicator keeps MPI_ERRORS_ARE_FATAL,
   * so a failing MPI call never returns here. */
  int rank, size, mine, first;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  mine = err != TASO_OK ? rank : size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return TASO_OK;
  struct {
    int code;
    char text[MESSAGE_LEN];
  } msg = {0};
  if (rank == first) {
    msg.code = (int)err;
    const char *detail = taso_error_detail();
    snprintf(msg.text, sizeof msg.text, "%s", detail[0] ? detail : taso_strerror(err));
  }
  MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, first, comm);
  if (rank == first || first == 0) return taso_error((taso_err_t)msg.code, "%s", msg.text);
  return taso_error((taso_err_t)msg.code, "rank %d: %s", first, msg.text);
}
