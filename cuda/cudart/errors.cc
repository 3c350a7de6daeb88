// SPDX-License-Identifier: GPL-2.0-or-later
// cudaGetErrorName and cudaGetErrorString. Names: every value CUDA 13's
// runtime has (the list is cuda_runtime_api.h's enum). Descriptions: the
// driver's for values both APIs share (libcuda's table, cuGetErrorString),
// the runtime's own below; anything else is "unrecognized error code", as
// CUDA answers.
#include <cstddef>

#include "cuda/cudart/runtime.h"

namespace {

struct Name {
  cudaError_t value;
  const char* name;
};

#define N(x) \
  { x, #x }
constexpr Name NAMES[] = {
    N(cudaSuccess),
    N(cudaErrorInvalidValue),
    N(cudaErrorMemoryAllocation),
    N(cudaErrorInitializationError),
    N(cudaErrorCudartUnloading),
    N(cudaErrorProfilerDisabled),
    N(cudaErrorProfilerNotInitialized),
    N(cudaErrorProfilerAlreadyStarted),
    N(cudaErrorProfilerAlreadyStopped),
    N(cudaErrorInvalidConfiguration),
    N(cudaErrorInvalidPitchValue),
    N(cudaErrorInvalidSymbol),
    N(cudaErrorInvalidHostPointer),
    N(cudaErrorInvalidDevicePointer),
    N(cudaErrorInvalidTexture),
    N(cudaErrorInvalidTextureBinding),
    N(cudaErrorInvalidChannelDescriptor),
    N(cudaErrorInvalidMemcpyDirection),
    N(cudaErrorAddressOfConstant),
    N(cudaErrorTextureFetchFailed),
    N(cudaErrorTextureNotBound),
    N(cudaErrorSynchronizationError),
    N(cudaErrorInvalidFilterSetting),
    N(cudaErrorInvalidNormSetting),
    N(cudaErrorMixedDeviceExecution),
    N(cudaErrorNotYetImplemented),
    N(cudaErrorMemoryValueTooLarge),
    N(cudaErrorStubLibrary),
    N(cudaErrorInsufficientDriver),
    N(cudaErrorCallRequiresNewerDriver),
    N(cudaErrorInvalidSurface),
    N(cudaErrorDuplicateVariableName),
    N(cudaErrorDuplicateTextureName),
    N(cudaErrorDuplicateSurfaceName),
    N(cudaErrorDevicesUnavailable),
    N(cudaErrorIncompatibleDriverContext),
    N(cudaErrorMissingConfiguration),
    N(cudaErrorPriorLaunchFailure),
    N(cudaErrorLaunchMaxDepthExceeded),
    N(cudaErrorLaunchFileScopedTex),
    N(cudaErrorLaunchFileScopedSurf),
    N(cudaErrorSyncDepthExceeded),
    N(cudaErrorLaunchPendingCountExceeded),
    N(cudaErrorInvalidDeviceFunction),
    N(cudaErrorNoDevice),
    N(cudaErrorInvalidDevice),
    N(cudaErrorDeviceNotLicensed),
    N(cudaErrorSoftwareValidityNotEstablished),
    N(cudaErrorStartupFailure),
    N(cudaErrorInvalidKernelImage),
    N(cudaErrorDeviceUninitialized),
    N(cudaErrorMapBufferObjectFailed),
    N(cudaErrorUnmapBufferObjectFailed),
    N(cudaErrorArrayIsMapped),
    N(cudaErrorAlreadyMapped),
    N(cudaErrorNoKernelImageForDevice),
    N(cudaErrorAlreadyAcquired),
    N(cudaErrorNotMapped),
    N(cudaErrorNotMappedAsArray),
    N(cudaErrorNotMappedAsPointer),
    N(cudaErrorECCUncorrectable),
    N(cudaErrorUnsupportedLimit),
    N(cudaErrorDeviceAlreadyInUse),
    N(cudaErrorPeerAccessUnsupported),
    N(cudaErrorInvalidPtx),
    N(cudaErrorInvalidGraphicsContext),
    N(cudaErrorNvlinkUncorrectable),
    N(cudaErrorJitCompilerNotFound),
    N(cudaErrorUnsupportedPtxVersion),
    N(cudaErrorJitCompilationDisabled),
    N(cudaErrorUnsupportedExecAffinity),
    N(cudaErrorUnsupportedDevSideSync),
    N(cudaErrorContained),
    N(cudaErrorInvalidSource),
    N(cudaErrorFileNotFound),
    N(cudaErrorSharedObjectSymbolNotFound),
    N(cudaErrorSharedObjectInitFailed),
    N(cudaErrorOperatingSystem),
    N(cudaErrorInvalidResourceHandle),
    N(cudaErrorIllegalState),
    N(cudaErrorLossyQuery),
    N(cudaErrorSymbolNotFound),
    N(cudaErrorNotReady),
    N(cudaErrorIllegalAddress),
    N(cudaErrorLaunchOutOfResources),
    N(cudaErrorLaunchTimeout),
    N(cudaErrorLaunchIncompatibleTexturing),
    N(cudaErrorPeerAccessAlreadyEnabled),
    N(cudaErrorPeerAccessNotEnabled),
    N(cudaErrorSetOnActiveProcess),
    N(cudaErrorContextIsDestroyed),
    N(cudaErrorAssert),
    N(cudaErrorTooManyPeers),
    N(cudaErrorHostMemoryAlreadyRegistered),
    N(cudaErrorHostMemoryNotRegistered),
    N(cudaErrorHardwareStackError),
    N(cudaErrorIllegalInstruction),
    N(cudaErrorMisalignedAddress),
    N(cudaErrorInvalidAddressSpace),
    N(cudaErrorInvalidPc),
    N(cudaErrorLaunchFailure),
    N(cudaErrorCooperativeLaunchTooLarge),
    N(cudaErrorTensorMemoryLeak),
    N(cudaErrorNotPermitted),
    N(cudaErrorNotSupported),
    N(cudaErrorSystemNotReady),
    N(cudaErrorSystemDriverMismatch),
    N(cudaErrorCompatNotSupportedOnDevice),
    N(cudaErrorMpsConnectionFailed),
    N(cudaErrorMpsRpcFailure),
    N(cudaErrorMpsServerNotReady),
    N(cudaErrorMpsMaxClientsReached),
    N(cudaErrorMpsMaxConnectionsReached),
    N(cudaErrorMpsClientTerminated),
    N(cudaErrorCdpNotSupported),
    N(cudaErrorCdpVersionMismatch),
    N(cudaErrorStreamCaptureUnsupported),
    N(cudaErrorStreamCaptureInvalidated),
    N(cudaErrorStreamCaptureMerge),
    N(cudaErrorStreamCaptureUnmatched),
    N(cudaErrorStreamCaptureUnjoined),
    N(cudaErrorStreamCaptureIsolation),
    N(cudaErrorStreamCaptureImplicit),
    N(cudaErrorCapturedEvent),
    N(cudaErrorStreamCaptureWrongThread),
    N(cudaErrorTimeout),
    N(cudaErrorGraphExecUpdateFailure),
    N(cudaErrorExternalDevice),
    N(cudaErrorInvalidClusterSize),
    N(cudaErrorFunctionNotLoaded),
    N(cudaErrorInvalidResourceType),
    N(cudaErrorInvalidResourceConfiguration),
    N(cudaErrorUnknown),
    N(cudaErrorApiFailureBase),
};
#undef N

// The runtime's own errors (no CUresult has their value).
constexpr Name OWN[] = {
    {cudaErrorInvalidConfiguration, "invalid configuration argument"},
    {cudaErrorInvalidSymbol, "invalid device symbol"},
    {cudaErrorInvalidHostPointer, "invalid host pointer"},
    {cudaErrorInvalidDevicePointer, "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorMissingConfiguration, "__global__ function call is not configured"},
    {cudaErrorInvalidDeviceFunction, "invalid device function"},
    {cudaErrorInvalidDevice, "invalid device ordinal"},
};

constexpr const char* UNRECOGNIZED = "unrecognized error code";

}  // namespace

extern "C" {

const char* cudaGetErrorName(cudaError_t error) {
  for (const auto& n : NAMES)
    if (n.value == error) return n.name;
  return UNRECOGNIZED;
}

const char* cudaGetErrorString(cudaError_t error) {
  for (const auto& n : OWN)
    if (n.value == error) return n.name;
  const char* s = nullptr;
  if (cuGetErrorString(static_cast<CUresult>(error), &s) == CUDA_SUCCESS && s != nullptr) return s;
  return UNRECOGNIZED;
}

}  // extern "C"
