//! Conversion of custom resources between served versions through a conversion webhook
//! (`spec.conversion.strategy: Webhook`), as a real API server does it.
