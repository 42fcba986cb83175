"""The domain model: tools and catalog versions, published names, compact signatures, listing
fragments, the deferral policy, the calling principal and LLM token counting. No I/O."""
