// The FastRPC transport (a phone's cDSP) where there is none: every step that cannot happen says
// which and why, naming the node or file, instead of crashing or hanging; the transport a device
// uses is chosen by TANDEM_HEXAGON_TRANSPORT, and a bad value is refused naming it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "devices/hexagon/hexagon_device.h"
#include "hexagon/host/fastrpc/fastrpc_transport.h"
#include "tests/model/test_models.h"

namespace tandem::hexagon {
namespace {

TEST(FastrpcTransport, AMissingNodeIsNamed) {
  FastrpcOptions o;
  o.device = "/nonexistent/fastrpc-cdsp";
  auto t = FastrpcTransport::open(o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("cannot open /nonexistent/fastrpc-cdsp: No such file or directory"), std::string::npos)
      << t.status().message();
}

// A node that is not FastRPC's (/dev/null): the shell's dma-buf is the first ioctl, and its
// failure names the node and the errno.
TEST(FastrpcTransport, ANodeThatIsNotTheDriversFailsAtItsFirstIoctl) {
  const std::string shell = tandem::testing::process_temp_dir() + "/fastrpc_shell_unsigned_3";
  std::ofstream(shell) << "not a shell";
  FastrpcOptions o;
  o.device = "/dev/null";
  o.shell = shell;
  auto t = FastrpcTransport::open(o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("/dev/null: a dma-buf of 11 bytes"), std::string::npos) << t.status().message();
}

TEST(HexagonTransport, TheVariableChoosesAndABadValueIsNamed) {
  setenv("TANDEM_HEXAGON_TRANSPORT", "fastrpc", 1);
  setenv("TANDEM_FASTRPC_DEVICE", "/nonexistent/fastrpc-cdsp", 1);
  auto d = devices::HexagonDevice::open(nullptr);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("cannot open /nonexistent/fastrpc-cdsp"), std::string::npos) << d.status().message();
  setenv("TANDEM_HEXAGON_TRANSPORT", "usb", 1);
  d = devices::HexagonDevice::open(nullptr);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("TANDEM_HEXAGON_TRANSPORT: 'usb' is not qemu or fastrpc"), std::string::npos)
      << d.status().message();
  unsetenv("TANDEM_HEXAGON_TRANSPORT");
  unsetenv("TANDEM_FASTRPC_DEVICE");
}

}  // namespace
}  // namespace tandem::hexagon
